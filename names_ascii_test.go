package mql

import "testing"

func FuzzASCIIName(f *testing.F) {
	for _, s := range []string{"a", "a-b", "a--b", "-a", "a-", "_x:y/z", "1a", "a b", "Klärveld", "a-b-c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if asciiName(s) && !nameRE.MatchString(s) {
			t.Fatalf("asciiName(%q) but the pattern refuses it", s)
		}
		ascii := true
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				ascii = false
			}
		}
		if ascii && nameRE.MatchString(s) && !asciiName(s) {
			t.Fatalf("pattern accepts ASCII %q but asciiName refuses it", s)
		}
	})
}
