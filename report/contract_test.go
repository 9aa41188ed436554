package report

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestEveryJSONFieldIsDocumented walks the Report type and checks that REPORT.md names
// each JSON field, as `name`.
func TestEveryJSONFieldIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("REPORT.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() != reflect.TypeFor[Report]().PkgPath() {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("REPORT.md does not document %s.%s (`%s`)", path, f.Name, name)
			}
			walk(f.Type, path+"."+f.Name)
		}
	}
	walk(reflect.TypeFor[Report](), "Report")
	if len(seen) < 10 {
		t.Fatalf("walked only %d types", len(seen))
	}
}
