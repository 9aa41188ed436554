package elastic

import (
	"testing"
	"time"
)

// FuzzDecodeAnswer feeds search answers (outside input) to the one-pass decoder and
// the entry decoder, in both modes: they must not panic, and whatever they accept must
// be an entry or an unparseable document.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(`{"hits":{"hits":[{"_index":"i","_id":"1","sort":[1710806399123000000,0],"_source":{"@timestamp":"2024-03-18T23:59:59.123Z","@cf":{"app":"a","app_id":"g"},"@message":"x","rtr":{"timestamp":"2024-03-18T23:59:59.1Z","status":200,"src":{"host":"1.2.3.4","port":5},"x_forwarded_for":["a","b"],"extra":{"instance_id":"i","backend_time":"0.1"}}}}]}}`))
	f.Add([]byte(`{"hits":{"hits":[{"_source":{"rtr.status":"abc","rtr":{"app":{"index":-1}}}},{"_source":null}]}}`))
	f.Add([]byte(`{"_shards":{"failed":1,"failures":[{"reason":{"type":"x"}}]},"hits":{"total":5}}`))
	def := DefaultFields().withDefaults()
	schemas := map[bool]*schema{false: newSchema(sourceIncludes(def, false)), true: newSchema(sourceIncludes(def, true))}
	f.Fuzz(func(t *testing.T, b []byte) {
		for raw, s := range schemas {
			a, err := s.decode(b)
			if err != nil {
				continue
			}
			_ = total(a.Total)
			for i := range a.Hits {
				decodeEntry(s, &def, raw, &a.Hits[i], time.Unix(0, 0))
			}
		}
		errorTypes(b)
	})
}
