package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// A tool's arguments are checked against its schema here rather than by the SDK, whose
// messages quote the schema (`does not match regular expression "^[^\\x00-\\x40…"`, `3/2 is
// greater than 1.000000`): a model needs the rule said in words it can act on. The schemas
// use only the keywords checked here (and format, a hint that the SDK did not check either);
// checkSchema refuses any other when a tool is added.

// shape is a string pattern of the schemas, and what it asks for in words.
type shape struct {
	re    *regexp.Regexp
	words string
}

const nameWords = "letters and digits (of any script), _ : and /, with single dashes between them, starting with a letter or _"

// shapes says every pattern of the tools' schemas in words.
func shapes() map[string]shape {
	return map[string]shape{
		namePattern:    {words: "a name: " + nameWords + `, such as "Klarveld", "price_per_seat" or "plan:pick-vendor"`},
		subjectPattern: {words: `a subject's name, or "*" for every subject; a name is ` + nameWords + `, such as "Klarveld"`},
		keyPattern:     {words: `a pattern of claim keys: "Subject", "Subject.*", "*.predicate", "Subject.predicate" or "*", each name ` + nameWords},
		versionPattern: {words: `a claim version Subject.predicate@N, such as "Klarveld.price_per_seat@2", where Subject and predicate are ` + nameWords},
		nodePattern:    {words: `a subject, a key Subject.predicate or an artifact, with @N for one version, such as "Klarveld.price_per_seat", "Klarveld.price_per_seat@2" or "plan:pick-vendor@1", each name ` + nameWords},
		artifactRefPat: {words: `an artifact's name, with @N for one version, such as "plan:pick-vendor" or "plan:pick-vendor@1" (no "."), the name ` + nameWords},
		timePattern:    {words: `a date "2027-01-01" (midnight UTC) or an RFC 3339 time "2027-01-01T10:00:00Z" (Z or an offset such as +02:00)`},
	}
}

// argChecker checks a tool's arguments against its schema.
type argChecker struct {
	tool   string
	schema *jsonschema.Schema
	shapes map[string]shape
}

// newArgChecker returns the checker of tool's schema sc. It panics if sc uses a keyword the
// checker does not judge, or a pattern it cannot say in words: a programming error.
func newArgChecker(tool string, sc *jsonschema.Schema) *argChecker {
	c := &argChecker{tool: tool, schema: sc, shapes: shapes()}
	c.checkSchema(tool, sc)
	return c
}

func (c *argChecker) checkSchema(at string, sc *jsonschema.Schema) {
	known := jsonschema.Schema{
		Type: sc.Type, Types: sc.Types, Description: sc.Description, Enum: sc.Enum, Pattern: sc.Pattern,
		MinLength: sc.MinLength, MinItems: sc.MinItems, Minimum: sc.Minimum, Maximum: sc.Maximum,
		Items: sc.Items, Properties: sc.Properties, PropertyOrder: sc.PropertyOrder, Required: sc.Required,
		AdditionalProperties: sc.AdditionalProperties, Format: sc.Format,
	}
	a, _ := json.Marshal(known)
	b, _ := json.Marshal(sc)
	if string(a) != string(b) {
		panic(fmt.Sprintf("mcpserver: the schema of %s uses a keyword the argument checker does not judge: %s", at, b))
	}
	if sc.Properties != nil && (sc.AdditionalProperties == nil || sc.AdditionalProperties.Not == nil) {
		panic(fmt.Sprintf("mcpserver: the schema of %s allows properties it does not name; the checker refuses them", at))
	}
	if len(sc.Enum) > 0 && sc.Type != "string" {
		panic(fmt.Sprintf("mcpserver: the schema of %s has an enum of another type than string, which the checker does not judge", at))
	}
	if sc.Pattern != "" {
		sh, ok := c.shapes[sc.Pattern]
		if !ok {
			panic(fmt.Sprintf("mcpserver: the pattern of %s is not said in words (shapes)", at))
		}
		sh.re = regexp.MustCompile(sc.Pattern)
		c.shapes[sc.Pattern] = sh
	}
	if sc.Items != nil {
		c.checkSchema(at+"[]", sc.Items)
	}
	for name, p := range sc.Properties {
		c.checkSchema(at+"."+name, p)
	}
}

// check decodes raw, the arguments of a call, into in once they fit the schema; the error says
// what does not fit, and how to fix it.
func (c *argChecker) check(raw json.RawMessage, in any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}") // arguments are optional in a call: none is an empty object
	}
	var args any
	if err := json.Unmarshal(raw, &args); err != nil {
		return fmt.Errorf("the arguments of %s are not JSON: %v", c.tool, err)
	}
	if err := c.value("", c.schema, args); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, in); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field != "" {
			if k := ute.Type.Kind(); k == reflect.Float32 || k == reflect.Float64 {
				return fmt.Errorf("%s is out of range: a component is at most about 3.4e38 in magnitude", ute.Field)
			}
			return fmt.Errorf("%s is too large: give a smaller whole number", ute.Field)
		}
		return fmt.Errorf("the arguments of %s: %v", c.tool, err)
	}
	return nil
}

// value checks v, found at path ("" for the arguments themselves), against sc.
func (c *argChecker) value(path string, sc *jsonschema.Schema, v any) error {
	if err := c.jsonType(path, sc, v); err != nil {
		return err
	}
	switch x := v.(type) {
	case string:
		if len(sc.Enum) > 0 && !slices.Contains(sc.Enum, any(x)) {
			return fmt.Errorf("%s is %q: it must be %s", path, x, oneOf(sc.Enum))
		}
		if sc.MinLength != nil && utf8.RuneCountInString(x) < *sc.MinLength {
			return fmt.Errorf("%s is empty: give it a value, or leave it out", path)
		}
		if sc.Pattern != "" && !c.shapes[sc.Pattern].re.MatchString(x) {
			return fmt.Errorf("%s %q is not %s", path, x, c.shapes[sc.Pattern].words)
		}
	case float64:
		switch {
		case sc.Minimum != nil && sc.Maximum != nil && (x < *sc.Minimum || x > *sc.Maximum):
			return fmt.Errorf("%s is %v: it must be from %v to %v", path, x, *sc.Minimum, *sc.Maximum)
		case sc.Minimum != nil && x < *sc.Minimum:
			return fmt.Errorf("%s is %v: it must be %v or more", path, x, *sc.Minimum)
		case sc.Maximum != nil && x > *sc.Maximum:
			return fmt.Errorf("%s is %v: it must be %v or less", path, x, *sc.Maximum)
		}
	case []any:
		if sc.MinItems != nil && len(x) < *sc.MinItems {
			return fmt.Errorf("%s is empty: give at least %d", path, *sc.MinItems)
		}
		for i, e := range x {
			if err := c.value(fmt.Sprintf("%s[%d]", path, i), sc.Items, e); err != nil {
				return err
			}
		}
	case map[string]any:
		return c.object(path, sc, x)
	}
	return nil
}

// object checks an object's properties: none unknown, the required present, each as its
// schema says.
func (c *argChecker) object(path string, sc *jsonschema.Schema, m map[string]any) error {
	what, names := "an argument of "+c.tool, "its arguments are"
	if path != "" {
		what, names = "a field of "+path, "its fields are"
	}
	order := sc.PropertyOrder
	if len(order) != len(sc.Properties) {
		order = sortedKeys(sc.Properties)
	}
	for _, k := range sortedKeys(m) {
		if _, ok := sc.Properties[k]; !ok {
			return fmt.Errorf("%q is not %s: %s %s", k, what, names, strings.Join(order, ", "))
		}
	}
	for _, k := range sc.Required {
		if _, ok := m[k]; !ok {
			return fmt.Errorf("%s is missing: %s needs %s", join(path, k), orTool(path, c.tool), strings.Join(sc.Required, ", "))
		}
	}
	for _, k := range order {
		if v, ok := m[k]; ok {
			if err := c.value(join(path, k), sc.Properties[k], v); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonType checks v's JSON type against sc's.
func (c *argChecker) jsonType(path string, sc *jsonschema.Schema, v any) error {
	types := sc.Types
	if sc.Type != "" {
		types = []string{sc.Type}
	}
	if len(types) == 0 {
		return nil
	}
	got := "null"
	switch x := v.(type) {
	case bool:
		got = "boolean"
	case float64:
		got = "number"
		if x == math.Trunc(x) {
			got = "integer"
		}
	case string:
		got = "string"
	case []any:
		got = "array"
	case map[string]any:
		got = "object"
	}
	for _, t := range types {
		if t == got || t == "number" && got == "integer" {
			return nil
		}
	}
	words := make([]string, len(types))
	for i, t := range types {
		words[i] = typeWords(t)
	}
	if path == "" {
		path = "the arguments of " + c.tool
	}
	if got == "number" && slices.Contains(types, "integer") {
		return fmt.Errorf("%s is %v: it must be a whole number", path, v)
	}
	return fmt.Errorf("%s must be %s, not %s", path, orList(words), typeWords(got))
}

// typeWords names a JSON Schema type for a model.
func typeWords(t string) string {
	switch t {
	case "boolean":
		return "a boolean (true or false)"
	case "number":
		return "a number"
	case "integer":
		return "a whole number"
	case "string":
		return "a string"
	case "array":
		return "a list"
	case "object":
		return "an object"
	}
	return t
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func orTool(path, tool string) string {
	if path == "" {
		return tool
	}
	return path
}

func oneOf(enum []any) string {
	words := make([]string, len(enum))
	for i, e := range enum {
		words[i] = fmt.Sprintf("%q", e)
	}
	return "one of " + strings.Join(words, ", ")
}

func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
