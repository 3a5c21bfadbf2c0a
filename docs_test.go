package binlog2ch

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks fails on a relative link in README.md or docs/*.md that
// names a missing file, or a heading its target does not have: the
// documentation is split over many files, and a moved or renamed section
// would otherwise leave dead links behind.
func TestDocLinks(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	problems, err := checkDocLinks(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestDocLinkCheckerFindsBrokenLinks shows the checker can fail: a missing
// file and missing headings are reported; good links, external ones and
// links inside code are not.
func TestDocLinkCheckerFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("sub/b.md", "# B file\n\n## Replication (`binlog2ch run`)\n")
	a := write("a.md", "# Title\n\n## Same\n\n## Same\n\n"+
		"[file](sub/b.md), [anchor](sub/b.md#replication-binlog2ch-run),\n"+
		"[second Same](#same-1), [split\ntext](sub/b.md), [web](https://example.com/x.md#y),\n"+
		"[mail](mailto:a@example.com), `[in code](nope.md)`,\n"+
		"[broken file](missing.md) and [broken anchor](sub/b.md#no-such-heading);\n"+
		"[a third Same](#same-2) there is not.\n\n"+
		"```\n[fenced](nope.md)\n## Not a heading\n```\n")

	problems, err := checkDocLinks([]string{a})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		a + ":11: missing.md: no such file",
		a + ":11: sub/b.md#no-such-heading: no heading with anchor no-such-heading",
		a + ":12: #same-2: no heading with anchor same-2",
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

// TestDocHeadingSlug checks anchors against what GitHub gives these
// headings.
func TestDocHeadingSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Replication (`binlog2ch run`)":                    "replication-binlog2ch-run",
		"Failover of the MySQL source: not built yet":      "failover-of-the-mysql-source-not-built-yet",
		"What `FINAL` and `_is_deleted = 0` are for":       "what-final-and-_is_deleted--0-are-for",
		"Try it with docker-compose":                       "try-it-with-docker-compose",
		"See [the docs](docs/x.md) and <b>this</b>":        "see-the-docs-and-this",
		"Déjà vu, 2.0!":                                    "déjà-vu-20",
		"**Bold** and *emphasis*":                          "bold-and-emphasis",
		"Full sync (`fullsync` and the snapshot of `run`)": "full-sync-fullsync-and-the-snapshot-of-run",
	} {
		if got := headingSlug(heading); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", heading, got, want)
		}
	}
}

var (
	// An ATX heading; setext headings are not recognised (the docs use
	// none), so a link to one is reported rather than passed.
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	// [text](target) and ![alt](target), an optional "title" after the
	// target; text may span lines.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^()\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// [ref]: target
	linkDef   = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	htmlTag   = regexp.MustCompile(`<[^>]*>`)
	mdLink    = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// checkDocLinks returns one line per broken relative link in the given
// Markdown files: "file:line: target: problem". External links (any URL
// scheme) are not followed.
func checkDocLinks(files []string) ([]string, error) {
	anchors := map[string]map[string]bool{} // file -> its heading anchors
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		a := map[string]bool{}
		for _, s := range headingSlugs(string(data)) {
			a[s] = true
		}
		anchors[file] = a
		return a, nil
	}

	var problems []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		text := proseOnly(string(data))
		var targets [][]int // [start, end) of each target in text
		for _, m := range inlineLink.FindAllStringSubmatchIndex(text, -1) {
			targets = append(targets, m[2:4])
		}
		for _, m := range linkDef.FindAllStringSubmatchIndex(text, -1) {
			targets = append(targets, m[2:4])
		}
		slices.SortFunc(targets, func(x, y []int) int { return x[0] - y[0] })
		for _, span := range targets {
			target := text[span[0]:span[1]]
			line := strings.Count(text[:span[0]], "\n") + 1
			if p := checkDocLink(file, target, anchorsOf); p != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", file, line, target, p))
			}
		}
	}
	return problems, nil
}

// checkDocLink returns what is wrong with one link target of file, or "".
func checkDocLink(file, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if target == "" {
		return "empty link"
	}
	if urlScheme.MatchString(target) {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	path, err := url.PathUnescape(path)
	if err != nil {
		return "bad escape: " + err.Error()
	}
	if strings.HasPrefix(path, "/") {
		// GitHub resolves these against the repository root, which
		// clones and other renderers do not know: keep links relative.
		return "absolute path; use a relative one"
	}
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if _, err := os.Stat(dest); err != nil {
			return "no such file"
		}
	}
	// Anchors into other kinds of files (a source file's #L12) are
	// GitHub's, not headings.
	if anchor == "" || !strings.HasSuffix(strings.ToLower(dest), ".md") {
		return ""
	}
	a, err := anchorsOf(dest)
	if err != nil {
		return err.Error()
	}
	if !a[anchor] {
		return "no heading with anchor " + anchor
	}
	return ""
}

// proseOnly blanks fenced code blocks and inline code spans, keeping line
// breaks so that offsets still give line numbers: links and headings
// inside code are text, not Markdown.
func proseOnly(text string) string {
	return blankCodeSpans(strings.Join(outsideFences(text), "\n"))
}

// outsideFences returns the text's lines with fenced code blocks (fences
// included) blanked.
func outsideFences(text string) []string {
	lines := strings.Split(text, "\n")
	var inFence string
	for i, l := range lines {
		if m := fence.FindStringSubmatch(l); m != nil {
			switch inFence {
			case "":
				inFence = m[1]
			case m[1]:
				inFence = ""
			}
			lines[i] = ""
		} else if inFence != "" {
			lines[i] = ""
		}
	}
	return lines
}

// blankCodeSpans blanks each inline code span: a run of n backticks up to
// the next run of exactly n within the paragraph (CommonMark's rule). A run
// without a match is literal text.
func blankCodeSpans(text string) string {
	b := []byte(text)
	run := func(i int) int { // backticks starting at i
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		return n
	}
	for i := 0; i < len(b); {
		n := run(i)
		if n == 0 {
			i++
			continue
		}
		end := -1
		for j := i + n; j < len(b); {
			if b[j] == '\n' && j+1 < len(b) && b[j+1] == '\n' {
				break // a blank line ends the paragraph
			}
			if m := run(j); m > 0 {
				if m == n {
					end = j + m
					break
				}
				j += m
				continue
			}
			j++
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i; k < end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end
	}
	return string(b)
}

// headingSlugs returns the anchors GitHub gives the headings of a Markdown
// text, in order; a repeated slug gets -1, -2, ... as on GitHub.
func headingSlugs(text string) []string {
	var slugs []string
	// As github-slugger: a slug taken gets its base's next count.
	occurrences := map[string]int{}
	for _, l := range outsideFences(text) {
		m := atxHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		base := headingSlug(m[1])
		s := base
		for {
			if _, taken := occurrences[s]; !taken {
				break
			}
			occurrences[base]++
			s = base + "-" + strconv.Itoa(occurrences[base])
		}
		occurrences[s] = 0
		slugs = append(slugs, s)
	}
	return slugs
}

// headingSlug is GitHub's anchor for a heading: the rendered text (links
// reduced to their text, tags dropped), lowercased, with every character
// but letters, digits, marks, '-' and '_' dropped and each space made '-'.
// Emphasis written with '_' keeps its underscores here, unlike on GitHub;
// the docs emphasise with '*'.
func headingSlug(heading string) string {
	text := mdLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
