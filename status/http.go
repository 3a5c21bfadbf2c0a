package status

import (
	"embed"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// The page is plain HTML, CSS and JavaScript, embedded: it loads nothing
// from the network, and its script fills the page from /status.json
// with textContent only, so a table's name is never read as markup.
//
//go:embed page
var page embed.FS

// JSONPath is where the status is served as JSON; `binlog2ch status`
// reads it.
const JSONPath = "/status.json"

// securityHeaders keep the page to its own files: no inline script, no
// other origin, no framing.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// Register serves the page at / (with /status.js and /status.css) and the
// JSON at /status.json on mux. Read-only: every route answers GET (and
// HEAD) only.
func (c *Collector) Register(mux *http.ServeMux) {
	file := func(name, ctype string) http.HandlerFunc {
		body, err := page.ReadFile("page/" + name)
		if err != nil {
			panic(err) // embedded at build time: a missing file is a build error
		}
		return func(w http.ResponseWriter, _ *http.Request) {
			securityHeaders(w)
			w.Header().Set("Content-Type", ctype)
			_, _ = w.Write(body)
		}
	}
	mux.HandleFunc("GET /{$}", file("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /status.js", file("status.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /status.css", file("status.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET "+JSONPath, func(w http.ResponseWriter, r *http.Request) {
		st := c.Status(ParseQuery(r))
		securityHeaders(w)
		w.Header().Set("Content-Type", "application/json")
		// The encoder escapes <, > and & in strings: the JSON is safe even
		// where something takes it for HTML.
		_ = json.NewEncoder(w).Encode(&st)
	})
}

// ParseQuery reads sort, filter and limit from a request's query string:
// ?sort=rate&filter=shop.&limit=50 (limit 0: every table; absent:
// DefaultLimit).
func ParseQuery(r *http.Request) Query {
	v := r.URL.Query()
	q := Query{Sort: v.Get("sort"), Filter: v.Get("filter"), Limit: DefaultLimit}
	if l, err := strconv.Atoi(v.Get("limit")); err == nil {
		q.Limit = l
	}
	return q.Normalize()
}

// Values is the query string that asks for q.
func (q Query) Values() string {
	v := url.Values{}
	if q.Sort != "" {
		v.Set("sort", q.Sort)
	}
	if q.Filter != "" {
		v.Set("filter", q.Filter)
	}
	v.Set("limit", strconv.Itoa(q.Limit))
	return v.Encode()
}
