package analysis

// asciiWords segments ASCII text into the words blevesearch/segment gives for it (UAX #29 as
// that library implements it), the letter and number words only, in order: what AppendTerms
// keeps. It exists for speed alone: the library's generic scanner was two fifths of a text
// index's cost on English text, which is ASCII almost always. FuzzASCIIWords holds it to the
// library's answer on every ASCII input.
//
// In ASCII the library's word rules come down to: a word is a run of letters, digits and '_',
// which may also go on through one ':', '.' or apostrophe between two letters, or one ',', ';',
// '.' or apostrophe between two digits. A word is a number when it holds a digit and no letter.
func asciiWords(text string, yield func(w string, letter bool)) {
	for i := 0; i < len(text); {
		if !isWordByte(text[i]) {
			i++
			continue
		}
		start, letter, digit := i, false, false
		for i < len(text) {
			c := text[i]
			switch {
			case isLetter(c):
				letter = true
			case isDigit(c):
				digit = true
			case c == '_':
			case i > start && i+1 < len(text) && joins(text[i-1], c, text[i+1]):
			default:
				goto end
			}
			i++
		}
	end:
		yield(text[start:i], letter || !digit)
	}
}

// joins reports whether mid, between prev and next, keeps a word going.
func joins(prev, mid, next byte) bool {
	switch {
	case isLetter(prev) && isLetter(next):
		return mid == ':' || mid == '.' || mid == '\''
	case isDigit(prev) && isDigit(next):
		return mid == ',' || mid == ';' || mid == '.' || mid == '\''
	}
	return false
}

func isWordByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
