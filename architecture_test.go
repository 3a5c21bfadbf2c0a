package binlog2ch

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The house rules of docs/architecture.md's Floors section, read from the
// code and the document. Each test reports every violation it finds in one
// run; each checker has a test on synthetic input beside it, so that none
// can pass by checking nothing.

const (
	architectureDoc = "docs/architecture.md"
	maxFileLines    = 700
	maxPackageLines = 3000
)

// TestArchitectureSizes fails on a non-test .go file over 700 lines or a
// package whose non-test .go files together are over 3,000: past that a
// file or package is doing more than one job.
func TestArchitectureSizes(t *testing.T) {
	for _, p := range checkSizes(loadModule(t)) {
		t.Error(p)
	}
}

// TestArchitectureFloors fails when a package is on no floor of the Floors
// table or on two, or imports a package that is not on a lower floor, or
// when a test helper package is imported outside tests.
func TestArchitectureFloors(t *testing.T) {
	floors, problems := parseFloors(readArchitectureDoc(t))
	problems = append(problems, checkFloors(loadModule(t), floors)...)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestArchitecturePackageDocs fails on a package without a doc comment, or
// one whose doc comment does not say what the package must not do.
func TestArchitecturePackageDocs(t *testing.T) {
	for _, p := range checkPackageDocs(loadModule(t)) {
		t.Error(p)
	}
}

// TestArchitectureLayout fails when a path in the Layout table or in "Where
// a change goes" names nothing, when a package directory is missing from
// the Layout table, or when "Where a change goes" lacks one of its entries
// or names a test that does not exist.
func TestArchitectureLayout(t *testing.T) {
	for _, p := range checkLayout(".", readArchitectureDoc(t), loadModule(t)) {
		t.Error(p)
	}
}

// archPackage is what the rules need to know of one package of the module.
type archPackage struct {
	Path  string // module-relative: "." for the root package, "cmd/binlog2ch"
	Name  string // the package clause of its non-test files
	Files []archFile
	// Module packages imported by non-test files and by _test.go files
	// (internal and external tests), each with the first file importing it.
	Imports, TestImports map[string]string
	Docs                 []archDoc // package doc comments of non-test files
	Tests                []string  // Test, Benchmark and Fuzz functions of its _test.go files
}

type archFile struct {
	Name      string // module-relative
	Lines     int    // as wc -l counts them
	Generated bool   // "// Code generated ... DO NOT EDIT."
}

type archDoc struct {
	File, Text string
}

var (
	moduleCache struct {
		pkgs []archPackage
		err  error
		done bool
	}
	generatedLine = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)
	testFunc      = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w*)\(`)
)

func loadModule(t *testing.T) []archPackage {
	t.Helper()
	if !moduleCache.done {
		moduleCache.pkgs, moduleCache.err = loadArchPackages(".")
		moduleCache.done = true
	}
	if moduleCache.err != nil {
		t.Fatal(moduleCache.err)
	}
	return moduleCache.pkgs
}

func readArchitectureDoc(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// loadArchPackages parses every .go file of the module rooted at root, as
// the go tool finds packages: directories named testdata or starting with
// "." or "_", and nested modules, are not part of it. Every file counts,
// whatever its build constraints (rawread_linux.go and rawread_other.go
// are both the package's code).
func loadArchPackages(root string) ([]archPackage, error) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(gomod)
	if m == nil {
		return nil, fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
	}
	module := string(m[1])
	rel := func(importPath string) (string, bool) {
		if importPath == module {
			return ".", true
		}
		if r, ok := strings.CutPrefix(importPath, module+"/"); ok {
			return r, true
		}
		return "", false
	}

	byDir := map[string]*archPackage{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		r = filepath.ToSlash(r)
		if d.IsDir() {
			name := d.Name()
			if r != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); r != "." && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(r, ".go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, data, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := path.Dir(r)
		pkg := byDir[dir]
		if pkg == nil {
			pkg = &archPackage{Path: dir, Imports: map[string]string{}, TestImports: map[string]string{}}
			byDir[dir] = pkg
		}
		isTest := strings.HasSuffix(r, "_test.go")
		imports := pkg.Imports
		if isTest {
			imports = pkg.TestImports
			for _, m := range testFunc.FindAllSubmatch(data, -1) {
				pkg.Tests = append(pkg.Tests, string(m[1]))
			}
		} else {
			pkg.Name = f.Name.Name
			pkg.Files = append(pkg.Files, archFile{
				Name:      r,
				Lines:     bytes.Count(data, []byte("\n")),
				Generated: generatedLine.Match(data[:fset.Position(f.Package).Offset]),
			})
			if f.Doc != nil {
				pkg.Docs = append(pkg.Docs, archDoc{File: r, Text: f.Doc.Text()})
			}
		}
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if to, ok := rel(ip); ok {
				if _, seen := imports[to]; !seen {
					imports[to] = r
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var pkgs []archPackage
	for _, p := range byDir {
		pkgs = append(pkgs, *p)
	}
	slices.SortFunc(pkgs, func(a, b archPackage) int { return strings.Compare(a.Path, b.Path) })
	return pkgs, nil
}

// checkSizes returns one line per file over maxFileLines and per package
// over maxPackageLines. Generated files count toward neither.
func checkSizes(pkgs []archPackage) []string {
	var problems []string
	for _, p := range pkgs {
		total, files := 0, 0
		for _, f := range p.Files {
			if f.Generated {
				continue
			}
			total += f.Lines
			files++
			if f.Lines > maxFileLines {
				problems = append(problems, fmt.Sprintf("%s: %d lines, over %d", f.Name, f.Lines, maxFileLines))
			}
		}
		if total > maxPackageLines {
			problems = append(problems, fmt.Sprintf("%s: %d lines in %d non-test files, over %d", p.Path, total, files, maxPackageLines))
		}
	}
	return problems
}

// archFloor is one row of the Floors table.
type archFloor struct {
	Number   int
	Packages []string
}

var (
	floorRow   = regexp.MustCompile(`^\|\s*(-?\d+)\s*\|(.*)\|\s*$`)
	backquoted = regexp.MustCompile("`([^`]+)`")
)

// section returns the lines of the "## heading" section of a Markdown text
// (up to the next level-2 heading), fenced code blanked, and the number of
// the line before its first.
func section(md, heading string) ([]string, int) {
	lines := outsideFences(md)
	start := -1
	for i, l := range lines {
		if start < 0 {
			if strings.TrimSpace(l) == "## "+heading {
				start = i + 1
			}
			continue
		}
		if strings.HasPrefix(l, "## ") {
			return lines[start:i], start
		}
	}
	if start < 0 {
		return nil, 0
	}
	return lines[start:], start
}

// parseFloors reads the Floors section's table: rows "| n | `pkg` `pkg` |",
// lowest floor first.
func parseFloors(md string) ([]archFloor, []string) {
	lines, offset := section(md, "Floors")
	if lines == nil {
		return nil, []string{architectureDoc + ": no \"## Floors\" section"}
	}
	var floors []archFloor
	var problems []string
	for i, l := range lines {
		m := floorRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if len(floors) > 0 && n <= floors[len(floors)-1].Number {
			problems = append(problems, fmt.Sprintf("%s:%d: floor %d after floor %d: list the floors lowest first", architectureDoc, offset+i+1, n, floors[len(floors)-1].Number))
		}
		f := archFloor{Number: n}
		for _, b := range backquoted.FindAllStringSubmatch(m[2], -1) {
			f.Packages = append(f.Packages, strings.TrimSuffix(b[1], "/"))
		}
		floors = append(floors, f)
	}
	if len(floors) == 0 {
		problems = append(problems, architectureDoc+": the Floors section has no table rows \"| n | `pkg` ... |\"")
	}
	return floors, problems
}

// checkFloors checks the module's packages against the floors: each on
// exactly one floor, each importing only packages on lower floors (tests
// may import any package but the top floor's), test helper packages (a
// name ending in "test") imported only by tests.
func checkFloors(pkgs []archPackage, floors []archFloor) []string {
	var problems []string
	floorOf := map[string]int{}
	known := map[string]bool{}
	for _, p := range pkgs {
		known[p.Path] = true
	}
	top := 0
	for _, f := range floors {
		top = max(top, f.Number)
		for _, p := range f.Packages {
			if prev, ok := floorOf[p]; ok {
				problems = append(problems, fmt.Sprintf("%s: on floor %d and on floor %d", p, prev, f.Number))
				continue
			}
			floorOf[p] = f.Number
			if !known[p] {
				problems = append(problems, fmt.Sprintf("%s: on floor %d but no package of the module", p, f.Number))
			}
		}
	}
	helper := map[string]bool{}
	for _, p := range pkgs {
		if strings.HasSuffix(p.Name, "test") {
			helper[p.Path] = true
		}
	}
	for _, p := range pkgs {
		own, ok := floorOf[p.Path]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: on no floor of %s", p.Path, architectureDoc))
		}
		for _, to := range sortedKeys(p.Imports) {
			file := p.Imports[to]
			if helper[to] {
				problems = append(problems, fmt.Sprintf("%s: imports test helper %s outside a test", file, to))
			}
			theirs, known := floorOf[to]
			if ok && known && theirs >= own {
				problems = append(problems, fmt.Sprintf("%s: %s (floor %d) imports %s (floor %d), not a lower floor", file, p.Path, own, to, theirs))
			}
		}
		for _, to := range sortedKeys(p.TestImports) {
			if f, known := floorOf[to]; known && f == top && len(floors) > 0 {
				problems = append(problems, fmt.Sprintf("%s: imports %s, on the top floor", p.TestImports[to], to))
			}
		}
	}
	return problems
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mustNot is the convention for a package's doc comment: a sentence with
// "must not" or "never" says what the package must not do.
var mustNot = regexp.MustCompile(`(?i)\b(must not|never)\b`)

// checkPackageDocs checks each package's doc comment: one, in one file,
// starting "Package <name>" (a command's may start as it likes), saying
// what the package must not do.
func checkPackageDocs(pkgs []archPackage) []string {
	var problems []string
	for _, p := range pkgs {
		if len(p.Files) == 0 {
			continue // test files only: no package to document
		}
		switch len(p.Docs) {
		case 0:
			problems = append(problems, fmt.Sprintf("%s: no package doc comment", p.Path))
			continue
		case 1:
		default:
			var files []string
			for _, d := range p.Docs {
				files = append(files, d.File)
			}
			problems = append(problems, fmt.Sprintf("%s: package doc comments in %s; keep one", p.Path, strings.Join(files, ", ")))
		}
		d := p.Docs[0]
		text := strings.Join(strings.Fields(d.Text), " ")
		if p.Name != "main" && !strings.HasPrefix(text, "Package "+p.Name+" ") {
			problems = append(problems, fmt.Sprintf("%s: doc comment does not start \"Package %s \"", d.File, p.Name))
		}
		if !mustNot.MatchString(text) {
			problems = append(problems, fmt.Sprintf("%s: %s's doc comment does not say what it must not do (a sentence with \"must not\" or \"never\")", d.File, p.Path))
		}
	}
	return problems
}

var (
	// A path written in backquotes: it has a slash or a file's extension.
	// `config.Config`, `batch.max_rows` and `Writer` are no paths.
	pathChars = regexp.MustCompile(`^[A-Za-z0-9_.*-]+(?:/[A-Za-z0-9_.*-]+)*/?$`)
	fileExt   = regexp.MustCompile(`\.(?:go|md|sql|sh|ya?ml|json|html|css|js|txt|toml|service|mod|sum)$`)
	testName  = regexp.MustCompile(`^(?:Test|Benchmark|Fuzz)[A-Z0-9_]\w*$`)
	changeFor = regexp.MustCompile(`^\s*[-*] \*A new ([^:*]+):?\*`)
	entryFor  = regexp.MustCompile(`^\s*[-*] \*([^:*]+):?\*`)
)

func isPath(s string) bool {
	return pathChars.MatchString(s) && !strings.HasPrefix(s, ".") && (strings.Contains(s, "/") || fileExt.MatchString(s))
}

// changeEntries are what "Where a change goes" must have an entry for: an
// entry "- *A new X:*" whose X contains the text.
var changeEntries = []string{"MySQL type", "DDL", "event type", "metric", "setting"}

// featureEntries are the features "Where a feature lives" must give a
// home: an entry "- *X:*" whose X contains the text.
var featureEntries = []string{"cascade", "partition", "GTID", "XA", "character set"}

// checkLayout checks the Layout table and the "Where a change goes" and
// "Where a feature lives" lists of the architecture document md against
// the module at root: every path they name exists (in the Layout table, a
// row's paths are relative to the row's first cell, or to root), every
// package directory but the root's is a row or a path in one, every test
// named in the lists exists, and they have every entry of changeEntries
// and featureEntries.
func checkLayout(root, md string, pkgs []archPackage) []string {
	var problems []string
	exists := func(p string) bool {
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(p, "/"))))
		return err == nil && len(matches) > 0
	}
	covered := map[string]bool{}

	lines, offset := section(md, "Layout")
	if lines == nil {
		problems = append(problems, architectureDoc+": no \"## Layout\" section")
	}
	for i, l := range lines {
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		if !strings.HasPrefix(l, "|") || len(cells) < 2 {
			continue
		}
		first := backquoted.FindStringSubmatch(cells[0])
		if first == nil {
			continue // the header and its rule
		}
		where := fmt.Sprintf("%s:%d", architectureDoc, offset+i+1)
		dir := strings.TrimSuffix(first[1], "/")
		if !exists(dir) {
			problems = append(problems, fmt.Sprintf("%s: %s: no such file or directory", where, first[1]))
		}
		covered[path.Clean(dir)] = true
		for _, b := range backquoted.FindAllStringSubmatch(strings.Join(cells[1:], "|"), -1) {
			p := b[1]
			if !isPath(p) {
				continue
			}
			switch inRow := path.Join(dir, p); {
			case exists(inRow):
				covered[path.Clean(inRow)] = true
			case exists(p):
				covered[path.Clean(p)] = true
			default:
				problems = append(problems, fmt.Sprintf("%s: %s (in %s): no such file or directory", where, p, first[1]))
			}
		}
	}
	for _, p := range pkgs {
		if p.Path != "." && len(p.Files) > 0 && !covered[p.Path] {
			problems = append(problems, fmt.Sprintf("%s: package %s is not in the Layout table", architectureDoc, p.Path))
		}
	}

	tests := map[string]bool{}
	for _, p := range pkgs {
		for _, t := range p.Tests {
			tests[t] = true
		}
	}
	all := strings.Split(md, "\n")
	start := slices.IndexFunc(all, func(l string) bool { return strings.Contains(l, "**Where a change goes.**") })
	if start < 0 {
		return append(problems, architectureDoc+": no \"**Where a change goes.**\" list")
	}
	text := outsideFences(md)
	entries, features := map[string]bool{}, map[string]bool{}
	for i := start; i < len(text) && (i == start || !strings.HasPrefix(text[i], "#")); i++ {
		if m := changeFor.FindStringSubmatch(text[i]); m != nil {
			entries[m[1]] = true
		} else if m := entryFor.FindStringSubmatch(text[i]); m != nil {
			features[m[1]] = true
		}
		where := fmt.Sprintf("%s:%d", architectureDoc, i+1)
		for _, b := range backquoted.FindAllStringSubmatch(text[i], -1) {
			switch p := b[1]; {
			case isPath(p) && !exists(p):
				problems = append(problems, fmt.Sprintf("%s: %s: no such file or directory", where, p))
			case testName.MatchString(p) && !tests[p]:
				problems = append(problems, fmt.Sprintf("%s: %s: no such test", where, p))
			}
		}
	}
	for _, want := range missingEntries(entries, changeEntries) {
		problems = append(problems, fmt.Sprintf("%s: \"Where a change goes\" has no entry \"- *A new ...%s...:*\"", architectureDoc, want))
	}
	for _, want := range missingEntries(features, featureEntries) {
		problems = append(problems, fmt.Sprintf("%s: \"Where a feature lives\" has no entry \"- *...%s...:*\"", architectureDoc, want))
	}
	return problems
}

// missingEntries are the wants no entry's text contains (any case).
func missingEntries(entries map[string]bool, wants []string) []string {
	var missing []string
	for _, want := range wants {
		found := false
		for e := range entries {
			found = found || strings.Contains(strings.ToLower(e), strings.ToLower(want))
		}
		if !found {
			missing = append(missing, want)
		}
	}
	return missing
}

// The checkers on synthetic input: each must find what it is for.

func TestArchitectureLoaderReadsTheModule(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n")
	write("root.go", "// Package m is the root.\npackage m\n")
	write("a/a.go", "// Package a does a.\npackage a\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/m\"\n)\n\nvar _ = fmt.Sprint\nvar _ = m.X\n")
	write("a/gen.go", "// Code generated by hand. DO NOT EDIT.\n\npackage a\n")
	write("a/a_test.go", "package a_test\n\nimport \"example.com/m/b\"\n\nfunc TestA(t *testing.T) {}\n")
	write("b/b_linux.go", "//go:build linux\n\npackage b\n")
	write("b/testdata/x.go", "package nothing\n")
	write("b/_old/x.go", "package nothing\n")
	write("nested/go.mod", "module example.com/other\n")
	write("nested/n.go", "package n\n")

	pkgs, err := loadArchPackages(dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, p := range pkgs {
		paths = append(paths, p.Path)
	}
	if want := []string{".", "a", "b"}; !slices.Equal(paths, want) {
		t.Fatalf("packages %v, want %v", paths, want)
	}
	a := pkgs[1]
	wantFiles := []archFile{{"a/a.go", 11, false}, {"a/gen.go", 3, true}}
	if !slices.Equal(a.Files, wantFiles) {
		t.Errorf("a's files %v, want %v", a.Files, wantFiles)
	}
	if len(a.Imports) != 1 || a.Imports["."] != "a/a.go" {
		t.Errorf("a imports %v, want . from a/a.go", a.Imports)
	}
	if len(a.TestImports) != 1 || a.TestImports["b"] != "a/a_test.go" {
		t.Errorf("a's tests import %v, want b from a/a_test.go", a.TestImports)
	}
	if !slices.Equal(a.Tests, []string{"TestA"}) {
		t.Errorf("a's tests %v, want [TestA]", a.Tests)
	}
	if len(a.Docs) != 1 || a.Docs[0].Text != "Package a does a.\n" {
		t.Errorf("a's docs %v", a.Docs)
	}
	if b := pkgs[2]; b.Name != "b" || len(b.Files) != 1 {
		t.Errorf("b: %+v", b)
	}
}

func TestArchitectureSizeCheckerFindsBigCode(t *testing.T) {
	pkgs := []archPackage{
		{Path: "small", Files: []archFile{{"small/a.go", 700, false}, {"small/b.go", 700, false}}},
		{Path: "big", Files: []archFile{
			{"big/a.go", 701, false}, {"big/b.go", 700, false}, {"big/c.go", 700, false},
			{"big/d.go", 700, false}, {"big/e.go", 200, false}, {"big/gen.go", 5000, true},
		}},
		{Path: "exact", Files: []archFile{{"exact/a.go", 700, false}, {"exact/b.go", 700, false},
			{"exact/c.go", 700, false}, {"exact/d.go", 700, false}, {"exact/e.go", 200, false}}},
	}
	got := checkSizes(pkgs)
	want := []string{
		"big/a.go: 701 lines, over 700",
		"big: 3001 lines in 5 non-test files, over 3000",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestArchitectureFloorCheckerFindsUpwardImports(t *testing.T) {
	md := "# A\n\n## Floors\n\n| floor | packages |\n|---|---|\n" +
		"| 0 | `low` `helpertest` `twice` |\n" +
		"| 1 | `mid/` `side` `gone` |\n" +
		"| 1 | `twice` |\n" +
		"| 3 | `cmd/x` |\n\n## Next\n\n| 9 | `ignored` |\n"
	floors, problems := parseFloors(md)
	if len(floors) != 4 || !slices.Equal(floors[1].Packages, []string{"mid", "side", "gone"}) {
		t.Fatalf("floors %v", floors)
	}
	pkgs := []archPackage{
		{Path: "low", Name: "low", Imports: map[string]string{}, TestImports: map[string]string{"mid": "low/low_test.go"}},
		{Path: "helpertest", Name: "helpertest"},
		{Path: "twice", Name: "twice"},
		{Path: "mid", Name: "mid", Imports: map[string]string{"low": "mid/a.go", "side": "mid/b.go", "helpertest": "mid/c.go"}},
		{Path: "side", Name: "side", Imports: map[string]string{"cmd/x": "side/s.go"}, TestImports: map[string]string{"helpertest": "side/s_test.go", "cmd/x": "side/s_test.go"}},
		{Path: "nowhere", Name: "nowhere", Imports: map[string]string{"low": "nowhere/n.go"}},
		{Path: "cmd/x", Name: "main", Imports: map[string]string{"mid": "cmd/x/main.go"}},
	}
	problems = append(problems, checkFloors(pkgs, floors)...)
	want := []string{
		"docs/architecture.md:9: floor 1 after floor 1: list the floors lowest first",
		"gone: on floor 1 but no package of the module",
		"twice: on floor 0 and on floor 1",
		"mid/c.go: imports test helper helpertest outside a test",
		"mid/b.go: mid (floor 1) imports side (floor 1), not a lower floor",
		"side/s.go: side (floor 1) imports cmd/x (floor 3), not a lower floor",
		"side/s_test.go: imports cmd/x, on the top floor",
		"nowhere: on no floor of docs/architecture.md",
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if _, p := parseFloors("# A\n\n## Layout\n"); len(p) != 1 {
		t.Errorf("a document without Floors: %v", p)
	}
}

func TestArchitectureDocCheckerFindsMissingRules(t *testing.T) {
	doc := func(file, text string) []archDoc { return []archDoc{{file, text}} }
	file := []archFile{{"x.go", 1, false}}
	pkgs := []archPackage{
		{Path: "good", Name: "good", Files: file, Docs: doc("good/a.go", "Package good does a thing.\nIt must\nnot do another.\n")},
		{Path: "never", Name: "never", Files: file, Docs: doc("never/a.go", "Package never does a thing. It Never does another.\n")},
		{Path: "cmd/x", Name: "main", Files: file, Docs: doc("cmd/x/main.go", "Command x runs. It never serves.\n")},
		{Path: "none", Name: "none", Files: file},
		{Path: "vague", Name: "vague", Files: file, Docs: doc("vague/a.go", "Package vague does things; nevertheless it mustn't be misread.\n")},
		{Path: "named", Name: "named", Files: file, Docs: doc("named/a.go", "Package other must not.\n")},
		{Path: "two", Name: "two", Files: file, Docs: []archDoc{{"two/a.go", "Package two must not.\n"}, {"two/b.go", "Package two again.\n"}}},
		{Path: "testsonly", Name: "testsonly_test"},
	}
	got := checkPackageDocs(pkgs)
	want := []string{
		"none: no package doc comment",
		"vague/a.go: vague's doc comment does not say what it must not do (a sentence with \"must not\" or \"never\")",
		"named/a.go: doc comment does not start \"Package named \"",
		"two: package doc comments in two/a.go, two/b.go; keep one",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestArchitectureLayoutCheckerFindsMissingPaths(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a/one.go", "a/sub/s.go", "b/two.go", "c/c.go", "cmd/x/main.go", "root.go", "d/conf.yaml", "a/convert_int.go"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := "# A\n\n## Layout\n\n| path | what |\n|---|---|\n" +
		"| `a/` | `one.go` (the `Writer`, `config.Config`), `sub/`, `root.go`, `gone.go` |\n" +
		"| `cmd/x` | the binary |\n" +
		"| `z/` | missing |\n\n" +
		"## Flow\n\n`c/c.go` is not in the table.\n\n" +
		"**Where a change goes.**\n" +
		"- *A new MySQL type:* `a/convert*.go`, `a/nope*.go`, `b/two.go`; tests: `TestReal`, `TestMissing`.\n" +
		"- *A new DDL statement:* `d/conf.yaml`, `d/gone.yml`\n" +
		"- *A new metric:* nowhere\n\n" +
		"**Where a feature lives.**\n" +
		"- *Foreign-key cascades:* `a/one.go`\n" +
		"- *GTIDs:* `a/nogtid.go`\n\n" +
		"```\n`a/fenced.go`\n```\n\n## Next\n\n`b/after.go`\n"
	pkgs := []archPackage{
		{Path: ".", Files: []archFile{{}}}, {Path: "a", Files: []archFile{{}}, Tests: []string{"TestReal"}},
		{Path: "a/sub", Files: []archFile{{}}}, {Path: "b", Files: []archFile{{}}}, {Path: "c", Files: []archFile{{}}},
		{Path: "cmd/x", Files: []archFile{{}}}, {Path: "onlytests"},
	}
	got := checkLayout(dir, md, pkgs)
	want := []string{
		"docs/architecture.md:7: gone.go (in a/): no such file or directory",
		"docs/architecture.md:9: z/: no such file or directory",
		"docs/architecture.md: package b is not in the Layout table",
		"docs/architecture.md: package c is not in the Layout table",
		"docs/architecture.md:16: a/nope*.go: no such file or directory",
		"docs/architecture.md:16: TestMissing: no such test",
		"docs/architecture.md:17: d/gone.yml: no such file or directory",
		"docs/architecture.md:22: a/nogtid.go: no such file or directory",
		"docs/architecture.md: \"Where a change goes\" has no entry \"- *A new ...event type...:*\"",
		"docs/architecture.md: \"Where a change goes\" has no entry \"- *A new ...setting...:*\"",
		"docs/architecture.md: \"Where a feature lives\" has no entry \"- *...partition...:*\"",
		"docs/architecture.md: \"Where a feature lives\" has no entry \"- *...XA...:*\"",
		"docs/architecture.md: \"Where a feature lives\" has no entry \"- *...character set...:*\"",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// isPath is what decides which backquoted text the layout check reads as
// a path.
func TestArchitectureIsPath(t *testing.T) {
	for s, want := range map[string]bool{
		"source/":               true,
		"stream.go":             true,
		"cmd/binlog2ch":         true,
		"block/convert*.go":     true,
		"prometheus/alerts.yml": true,
		"config.Config":         false,
		"batch.max_rows":        false,
		"Writer":                false,
		"mysqlproto":            false,
		"INSERT ... SELECT":     false,
		"/status.json":          false,
		"binlog2ch fullsync":    false,
		"...":                   false,
	} {
		if got := isPath(s); got != want {
			t.Errorf("isPath(%q) = %v, want %v", s, got, want)
		}
	}
}
