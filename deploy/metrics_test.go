package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// metric is one of binlog2ch's documented metrics (docs/operations.md
// "Metrics and health").
type metric struct {
	kind   string              // gauge, counter or histogram
	labels map[string][]string // label -> its values (nil: any value)
}

var (
	tableLabels = map[string][]string{"database": nil, "table": nil}
	metrics     = map[string]metric{
		"binlog2ch_lag_seconds":                          {"gauge", nil},
		"binlog2ch_source_lag_seconds":                   {"gauge", nil},
		"binlog2ch_rows_total":                           {"counter", map[string][]string{"database": nil, "table": nil, "op": {"insert", "update", "delete"}}},
		"binlog2ch_events_read_total":                    {"counter", nil},
		"binlog2ch_flush_duration_seconds":               {"histogram", tableLabels},
		"binlog2ch_batch_rows":                           {"histogram", tableLabels},
		"binlog2ch_queue_rows":                           {"gauge", tableLabels},
		"binlog2ch_checkpoint_timestamp_seconds":         {"gauge", nil},
		"binlog2ch_checkpoint_binlog_file_index":         {"gauge", nil},
		"binlog2ch_checkpoint_binlog_position":           {"gauge", nil},
		"binlog2ch_read_binlog_file_index":               {"gauge", nil},
		"binlog2ch_read_binlog_position":                 {"gauge", nil},
		"binlog2ch_errors_total":                         {"counter", map[string][]string{"stage": {"read", "insert", "ddl", "checkpoint", "schema", "cascade"}}},
		"binlog2ch_ddl_total":                            {"counter", map[string][]string{"result": {"applied", "skipped", "ignored", "not_understood"}}},
		"binlog2ch_value_fixups_total":                   {"counter", map[string][]string{"database": nil, "table": nil, "kind": {"zero_date", "invalid_date", "date_out_of_range"}}},
		"binlog2ch_snapshot_rows_copied":                 {"gauge", tableLabels},
		"binlog2ch_snapshot_rows_estimated":              {"gauge", tableLabels},
		"binlog2ch_ready":                                {"gauge", nil},
		"binlog2ch_shard_rows_total":                     {"counter", map[string][]string{"shard": nil}},
		"binlog2ch_xa_prepared_transactions":             {"gauge", nil},
		"binlog2ch_statements_without_rows_total":        {"counter", map[string][]string{"action": {"apply", "recopy", "keep"}}},
		"binlog2ch_events_skipped_total":                 {"counter", map[string][]string{"type": nil}},
		"binlog2ch_ambiguous_inserts_total":              {"counter", map[string][]string{"outcome": {"resent", "present", "stopped"}}},
		"binlog2ch_replay_skipped_events_total":          {"counter", nil},
		"binlog2ch_migration_tables_followed_total":      {"counter", map[string][]string{"tool": {"gh-ost", "pt-osc"}}},
		"binlog2ch_table_copies_total":                   {"counter", map[string][]string{"reason": {"selected", "renamed", "add_column", "statement_dml", "partition", "resync", "failed", "migration", "server_changed", "ddl_during_copy"}}},
		"binlog2ch_tables_copying":                       {"gauge", nil},
		"binlog2ch_native_fallbacks_total":               {"counter", map[string][]string{"reason": {"unknown_packet", "compression", "header_type", "header_mismatch"}}},
		"binlog2ch_insert_streams_total":                 {"counter", nil},
		"binlog2ch_insert_streamed_batches_total":        {"counter", nil},
		"binlog2ch_clickhouse_uncompressed_frames_total": {"counter", map[string][]string{"reason": {"incompressible", "probe"}}},
		"binlog2ch_clickhouse_insert_connections_total":  {"counter", map[string][]string{"compression": {"lz4", "zstd", "none", "lz4-adaptive"}}},
		"binlog2ch_cascaded_rows_total":                  {"counter", map[string][]string{"database": nil, "table": nil, "action": {"delete", "set_null", "update"}}},
		"binlog2ch_cascade_duration_seconds":             {"histogram", nil},
		"binlog2ch_insert_budget_per_second":             {"gauge", nil},
		"binlog2ch_insert_budget_granted_total":          {"counter", map[string][]string{"reason": {"full", "interval", "live", "drain", "memory", "cascade"}}},
		"binlog2ch_insert_budget_waiting_tables":         {"gauge", nil},
		"binlog2ch_oldest_unsent_row_timestamp_seconds":  {"gauge", tableLabels},
		"binlog2ch_batch_buffer_bytes":                   {"gauge", nil},
		"binlog2ch_batch_buffer_limit_bytes":             {"gauge", nil},
		"binlog2ch_writers":                              {"gauge", map[string][]string{"state": {"running", "parked"}}},
		"binlog2ch_tables_failed":                        {"gauge", nil},
		"binlog2ch_tables_failed_total":                  {"counter", nil},

		// The source's binlog retention (replicator/retention.go).
		"binlog2ch_source_binlog_retention_headroom_seconds": {"gauge", nil},
		"binlog2ch_source_binlog_retention_margin_seconds":   {"gauge", nil},
	}
	// Labels Prometheus adds to every scraped series.
	targetLabels = []string{"job", "instance"}
)

var (
	selectorRE = regexp.MustCompile(`\b(binlog2ch_[a-z0-9_]+)\s*(\{[^}]*\})?\s*(\[)?`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
	groupingRE = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
)

// checkExpr reports what is wrong with a PromQL expression's use of
// binlog2ch metrics: a name not documented, a histogram without its
// _bucket/_sum/_count suffix, a label the metric does not have or a value
// it never takes, a counter used without a range (its raw value means
// nothing across restarts). ranged is false for Grafana's label_values
// queries, which name series without a range.
func checkExpr(expr string, ranged bool) []string {
	var problems []string
	used := map[string]bool{"le": true}
	for _, l := range targetLabels {
		used[l] = true
	}
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		name, matchers, rangeOpen := m[1], m[2], m[3] != ""
		base, suffix := name, ""
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, s); ok {
				if _, known := metrics[b]; known && metrics[b].kind == "histogram" {
					base, suffix = b, s
				}
			}
		}
		md, ok := metrics[base]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is not a documented binlog2ch metric", name))
			continue
		case md.kind == "histogram" && suffix == "":
			problems = append(problems, fmt.Sprintf("%s is a histogram: use %s_bucket, _sum or _count", name, name))
		case ranged && (md.kind == "counter" || md.kind == "histogram") && !rangeOpen:
			problems = append(problems, fmt.Sprintf("%s is a counter: use it with a range (rate, increase)", name))
		}
		for l := range md.labels {
			used[l] = true
		}
		for _, mm := range matcherRE.FindAllStringSubmatch(matchers, -1) {
			label, op, value := mm[1], mm[2], mm[3]
			if slices.Contains(targetLabels, label) || (label == "le" && suffix == "_bucket") {
				continue
			}
			values, has := md.labels[label]
			if !has {
				problems = append(problems, fmt.Sprintf("%s has no label %q", name, label))
				continue
			}
			if op == "=" && values != nil && !slices.Contains(values, value) {
				problems = append(problems, fmt.Sprintf("%s{%s}: %q is not one of %v", name, label, value, values))
			}
		}
	}
	for _, g := range groupingRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !used[l] {
				problems = append(problems, fmt.Sprintf("grouping by %q, a label none of the expression's metrics has", l))
			}
		}
	}
	return problems
}

// TestCheckExpr shows the checker catches the mistakes it is for.
func TestCheckExpr(t *testing.T) {
	for expr, wantProblems := range map[string]int{
		`binlog2ch_lag_seconds > 300`:                                                                      0,
		`sum by (stage) (rate(binlog2ch_errors_total{stage="insert"}[5m]))`:                                0,
		`histogram_quantile(0.99, sum by (le, table) (rate(binlog2ch_flush_duration_seconds_bucket[5m])))`: 0,
		`binlog2ch_lag_second > 300`:                                                                       1, // misspelt
		`binlog2ch_replication_lag_seconds > 300`:                                                          1, // undocumented
		`rate(binlog2ch_flush_duration_seconds[5m])`:                                                       1, // histogram without suffix
		`binlog2ch_rows_total > 0`:                                                                         1, // counter without range
		`increase(binlog2ch_ddl_total{result="not-understood"}[1h])`:                                       1, // no such value
		`rate(binlog2ch_rows_total{tabel="orders"}[5m])`:                                                   1, // no such label
		`sum by (stage) (rate(binlog2ch_rows_total[5m]))`:                                                  1, // grouping by a label rows_total lacks
		`up{job="binlog2ch"} == 0 and binlog2ch_queue_rows{table="t"}`:                                     0,
	} {
		if got := checkExpr(expr, true); len(got) != wantProblems {
			t.Errorf("%s: %d problems %q, want %d", expr, len(got), got, wantProblems)
		}
	}
}

type rulesFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestAlertRules checks every rule is complete, unknown keys included
// (a misspelt "annotation:" would silently drop them), and names only
// documented metrics.
func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf rulesFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	seen := map[string]bool{}
	n := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			n++
			switch {
			case r.Alert == "":
				t.Errorf("group %s: a rule without alert", g.Name)
			case seen[r.Alert]:
				t.Errorf("%s: defined twice", r.Alert)
			}
			seen[r.Alert] = true
			if strings.TrimSpace(r.Expr) == "" || r.For == "" {
				t.Errorf("%s: expr and for are required", r.Alert)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: labels.severity = %q, want warning or critical", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: annotations summary and description are required", r.Alert)
			}
			for _, p := range checkExpr(r.Expr, true) {
				t.Errorf("%s: %s", r.Alert, p)
			}
		}
	}
	// The alerts docs/operations.md "Monitoring" and the issue promise.
	for _, want := range []string{"Binlog2chDown", "Binlog2chLagHigh", "Binlog2chLagCritical", "Binlog2chNoProgress", "Binlog2chErrors", "Binlog2chNotReady"} {
		if !seen[want] {
			t.Errorf("alert %s is missing", want)
		}
	}
	t.Logf("%d rules", n)
}

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int                      `json:"id"`
		Type    string                   `json:"type"`
		Title   string                   `json:"title"`
		GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var variableRE = regexp.MustCompile(`\$(\{)?([a-zA-Z_][a-zA-Z0-9_]*)`)

// grafanaBuiltins are the variables Grafana itself provides.
var grafanaBuiltins = []string{"__rate_interval", "__interval", "__range"}

// dashboardExprs reads the dashboard and returns its panel queries by
// panel title, after checking its structure.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("grafana/binlog2ch.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("binlog2ch.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("dashboard: uid and title are required")
	}
	vars := slices.Clone(grafanaBuiltins)
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
		if q, ok := v.Query.(map[string]any); ok {
			expr, _ := q["query"].(string)
			for _, p := range checkExpr(expr, false) {
				t.Errorf("variable %s: %s", v.Name, p)
			}
		}
	}
	exprs := map[string][]string{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: a target without refId or expr", p.Title)
			}
			for _, m := range variableRE.FindAllStringSubmatch(tg.Expr, -1) {
				if !slices.Contains(vars, m[2]) {
					t.Errorf("panel %q: $%s is not a dashboard variable", p.Title, m[2])
				}
			}
			exprs[p.Title] = append(exprs[p.Title], tg.Expr)
		}
	}
	return exprs
}

// TestDashboard checks the dashboard's queries name only documented
// metrics and that it shows what operators look at first.
func TestDashboard(t *testing.T) {
	exprs := dashboardExprs(t)
	all := ""
	for title, es := range exprs {
		for _, e := range es {
			all += e + "\n"
			for _, p := range checkExpr(e, true) {
				t.Errorf("panel %q: %s", title, p)
			}
		}
	}
	for _, want := range []string{
		"binlog2ch_lag_seconds", "binlog2ch_source_lag_seconds", "binlog2ch_rows_total", "binlog2ch_flush_duration_seconds_bucket",
		"binlog2ch_batch_rows_bucket", "binlog2ch_queue_rows", "binlog2ch_errors_total", "binlog2ch_ddl_total", "binlog2ch_checkpoint_timestamp_seconds",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no panel shows %s", want)
		}
	}
}

// grafanaForPromtool replaces Grafana's variables with values Prometheus
// accepts, so promtool can parse the dashboard's queries.
var grafanaForPromtool = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
	"$job", ".*", "$instance", ".*", "$database", ".*", "$table", ".*")

// TestPromtool runs promtool, when installed, on the alerting rules, their
// unit tests (alerts_test.yml: each alert fires on the series that should
// raise it and not on those that should not), and the dashboard's queries
// (as recording rules, which promtool parses).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian package prometheus): alerts.yml is only checked by TestAlertRules, alerts_test.yml is not run")
	}
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("check", "rules", "prometheus/alerts.yml")
	run("test", "rules", "prometheus/alerts_test.yml")

	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for _, es := range dashboardExprs(t) {
		for _, e := range es {
			rules = append(rules, rule{fmt.Sprintf("dashboard:query_%d", len(rules)), grafanaForPromtool.Replace(e)})
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	run("check", "rules", file)
}

// TestMetricsListMatchesRegistry keeps the list above equal to the
// metrics metrics/metrics.go registers (the Name: of each metric's
// options), so renaming a metric there fails here rather than leaving an
// alert that can never fire.
func TestMetricsListMatchesRegistry(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "metrics", "metrics.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		key, ok := kv.Key.(*ast.Ident)
		lit, isLit := kv.Value.(*ast.BasicLit)
		if !ok || key.Name != "Name" || !isLit || lit.Kind != token.STRING {
			return true
		}
		if name, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(name, "binlog2ch_") {
			registered[name] = true
		}
		return true
	})
	for name := range registered {
		if _, ok := metrics[name]; !ok {
			t.Errorf("replicator registers %s, which the deploy tests do not know: add it to metrics here", name)
		}
	}
	for name := range metrics {
		if !registered[name] {
			t.Errorf("%s is not registered in metrics/metrics.go", name)
		}
	}
}
