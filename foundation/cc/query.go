package cc

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// query is a request's list parameters.
type query struct {
	v        url.Values
	page     int
	perPage  int
	orderBy  string
	selector []labelRequirement // label_selector; see labels
}

func (c *call) query() (*query, error) {
	q := &query{v: c.r.URL.Query(), page: 1, perPage: defaultPerPage}
	if p := q.v.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, badQuery("The query parameter is invalid: Page must be a positive integer")
		}
		q.page = n
	}
	if p := q.v.Get("per_page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > maxPerPage {
			return nil, badQuery("The query parameter is invalid: Per page must be between 1 and %d", maxPerPage)
		}
		q.perPage = n
	}
	q.orderBy = q.v.Get("order_by")
	if sel, ok := q.v["label_selector"]; ok {
		var err error
		if q.selector, err = parseLabelSelector(strings.Join(sel, ",")); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// list returns the values of filter key (comma-separated), nil when absent.
func (q *query) list(key string) []string {
	v, ok := q.v[key]
	if !ok {
		return nil
	}
	var out []string
	for _, s := range v {
		out = append(out, strings.Split(s, ",")...)
	}
	return out
}

// match reports whether value passes filter key (absent filter: always).
func (q *query) match(key, value string) bool {
	l := q.list(key)
	return l == nil || slices.Contains(l, value)
}

// nameLess orders names as CC's database collation does, case-insensitively (ABC,
// ghi, XYZ), so that `cf orgs` lists as on CF.
func nameLess(a, b string) bool {
	if la, lb := strings.ToLower(a), strings.ToLower(b); la != lb {
		return la < lb
	}
	return a < b
}

// paginate sorts items by order_by (name, created_at, updated_at; "-" for descending)
// and answers one page in the CC list envelope.
func paginate[T any](c *call, q *query, items []T, name func(T) string, created func(T) time.Time, render func(T) any, included map[string]any) error {
	switch q.orderBy {
	case "", "created_at":
	case "-created_at":
		sort.SliceStable(items, func(i, j int) bool { return created(items[i]).After(created(items[j])) })
	case "name":
		sort.SliceStable(items, func(i, j int) bool { return nameLess(name(items[i]), name(items[j])) })
	case "-name":
		sort.SliceStable(items, func(i, j int) bool { return nameLess(name(items[j]), name(items[i])) })
	case "updated_at", "-updated_at":
		// Updates are rare here: creation order is a fair stand-in.
		if q.orderBy[0] == '-' {
			sort.SliceStable(items, func(i, j int) bool { return created(items[i]).After(created(items[j])) })
		}
	default:
		return badQuery("Order by can only be: 'created_at', 'updated_at', 'name'")
	}
	total := len(items)
	pages := max(1, (total+q.perPage-1)/q.perPage)
	from := min((q.page-1)*q.perPage, total)
	to := min(from+q.perPage, total)
	resources := make([]any, 0, to-from)
	for _, it := range items[from:to] {
		resources = append(resources, render(it))
	}
	pageURL := func(p int) map[string]any {
		v := url.Values{}
		for k, vals := range q.v {
			if k != "page" && k != "per_page" {
				v[k] = vals
			}
		}
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(q.perPage))
		return map[string]any{"href": c.s.url(c.r.URL.Path + "?" + v.Encode())}
	}
	var next, prev any
	if q.page < pages {
		next = pageURL(q.page + 1)
	}
	if q.page > 1 {
		prev = pageURL(q.page - 1)
	}
	body := map[string]any{
		"pagination": map[string]any{"total_results": total, "total_pages": pages,
			"first": pageURL(1), "last": pageURL(pages), "next": next, "previous": prev},
		"resources": resources,
	}
	if included != nil {
		body["included"] = included
	}
	return c.json(http.StatusOK, body)
}
