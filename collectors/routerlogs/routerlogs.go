// Package routerlogs reads a run's router access-log entries back from where they were
// collected: an Elasticsearch or OpenSearch cluster fed by Cloud Foundry's Logstash
// pipeline (package routerlogs/elastic) or a file of access-log lines (package
// routerlogs/file). Every backend implements Source; a command picks one by name from
// an explicit map, e.g.
//
//	sources := map[string]func(cfg string) (routerlogs.Source, error){
//		"elasticsearch": newElastic,
//		"file":          newFile,
//	}
//
// A pull is resumable: each Batch carries the Cursor after it, which the caller stores
// (as JSON) with what it made of the batch, and a later Pull from that cursor goes on
// right after it, without duplicates and without gaps.
package routerlogs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

// Query selects a run's router requests.
type Query struct {
	// From and To bound the window, both inclusive. What time a backend compares is its
	// own: Elasticsearch's timestamp field (in CF the moment gorouter emitted the line,
	// i.e. when the response finished), a file's request time. A zero To is open.
	From, To time.Time
	// Apps are the apps whose requests are wanted, each given by name or by GUID; empty
	// means every app.
	Apps []string
}

// Entry is one router request.
type Entry struct {
	// Record is the request as gorouter logged it: from the document's parsed fields
	// (rtr.*) or from parsing the raw line.
	accesslog.Record
	// App is the app's name when the source knows it; AppGUID its GUID.
	App, AppGUID string
	// DocID is the document's _id in Elasticsearch, "" for files.
	DocID string
}

// Batch is a page of entries and the cursor after them. A batch may have no entries
// when it only moves the cursor past lines that did not match.
type Batch struct {
	Entries []Entry
	// Next is where a pull resumes to go on right after this batch.
	Next Cursor
	// Unparseable counts the documents (or lines) of this page that were router
	// requests of the window but could not be read; they are consumed all the same.
	Unparseable int
}

// Budget bounds one pull. Zero values mean unbounded.
type Budget struct {
	// MaxDocuments is the most documents the pull may retrieve (a quota); the pull stops
	// with exactly that many when there are more.
	MaxDocuments int64
	// MaxRequestsPerSecond paces the requests the pull sends, retries included.
	MaxRequestsPerSecond float64
}

// Result says how a pull ended.
type Result struct {
	// Retrieved counts the documents (lines) of the window consumed: entries emitted
	// plus unparseable ones.
	Retrieved int64
	// Requests counts the requests sent, retries included; Retries those that repeated
	// a failed one; Throttled the answers that were HTTP 429.
	Requests, Retries, Throttled int
	// BudgetExhausted is true when the pull stopped because Budget.MaxDocuments was
	// reached before the end of the window was seen.
	BudgetExhausted bool
	// Total is the number of documents in the window when the source knows it (a pull
	// from the beginning of an Elasticsearch window), -1 otherwise.
	Total int64
}

// Source yields router log entries.
//
// Pull sends the window's entries to emit, in pages and in order, until the window is
// exhausted, the budget is spent or ctx ends (then it returns ctx's error). An error
// from emit stops the pull and is returned as is. Pull given the Next cursor of the last
// batch emit accepted resumes right after it: no entry twice, none skipped, for the
// same Query (a later To may show more). The zero Cursor starts at the beginning.
//
// emit is called from Pull's goroutine and may keep the batch. One Pull at a time per
// Source; a Source may be used for many pulls one after the other.
type Source interface {
	Pull(ctx context.Context, q Query, from Cursor, b Budget, emit func(Batch) error) (Result, error)
}

// ErrCursorMismatch is returned (wrapped) by Pull for a cursor another kind of source
// made.
var ErrCursorMismatch = errors.New("routerlogs: cursor belongs to another kind of source")

// Cursor is where a pull stands; the zero value is the beginning. Callers store it as
// JSON (MarshalJSON, UnmarshalJSON) and otherwise treat it as opaque: its content
// belongs to the backend that made it.
type Cursor struct {
	state json.RawMessage // the backend's state, nil at the beginning
}

// IsZero reports whether c is the beginning.
func (c Cursor) IsZero() bool { return len(c.state) == 0 }

// MarshalJSON renders the beginning as {}.
func (c Cursor) MarshalJSON() ([]byte, error) {
	if c.IsZero() {
		return []byte("{}"), nil
	}
	return c.state, nil
}

// UnmarshalJSON accepts what MarshalJSON wrote; null and {} are the beginning.
func (c *Cursor) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return errors.New("routerlogs: cursor is not JSON")
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return fmt.Errorf("routerlogs: cursor is not a JSON object: %w", err)
	}
	if len(probe) == 0 { // {} or null
		c.state = nil
		return nil
	}
	c.state = append(json.RawMessage(nil), b...)
	return nil
}

// String is the cursor's JSON, for logs.
func (c Cursor) String() string {
	b, _ := c.MarshalJSON()
	return string(b)
}

// NewCursor wraps a backend's state, which must marshal to a JSON object with a
// "source" member naming the backend (Decode checks it).
func NewCursor(state any) (Cursor, error) {
	b, err := json.Marshal(state)
	if err != nil {
		return Cursor{}, fmt.Errorf("routerlogs: encode cursor: %w", err)
	}
	return Cursor{state: b}, nil
}

// Decode unmarshals the state of a cursor that source (the backend's name) made into
// state. It returns false, and leaves state alone, for the zero cursor; an error
// wrapping ErrCursorMismatch for another backend's cursor.
func (c Cursor) Decode(source string, state any) (bool, error) {
	if c.IsZero() {
		return false, nil
	}
	var head struct {
		Source string `json:"source"`
	}
	if err := json.Unmarshal(c.state, &head); err != nil {
		return false, fmt.Errorf("routerlogs: decode cursor: %w", err)
	}
	if head.Source != source {
		return false, fmt.Errorf("%w: made by %q, not %q", ErrCursorMismatch, head.Source, source)
	}
	if err := json.Unmarshal(c.state, state); err != nil {
		return false, fmt.Errorf("routerlogs: decode %s cursor: %w", source, err)
	}
	return true, nil
}

// InWindow reports whether t lies in q's window (From and To inclusive, zero To open).
func (q Query) InWindow(t time.Time) bool {
	if !q.From.IsZero() && t.Before(q.From) {
		return false
	}
	return q.To.IsZero() || !t.After(q.To)
}

// WantsApp reports whether an app given by name and GUID (either may be empty) is one
// q selects.
func (q Query) WantsApp(name, guid string) bool {
	if len(q.Apps) == 0 {
		return true
	}
	for _, a := range q.Apps {
		if a != "" && (a == name || a == guid) {
			return true
		}
	}
	return false
}
