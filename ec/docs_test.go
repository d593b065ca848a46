package ec

import (
	"bytes"
	"os"
	"regexp"
	"testing"
)

// docs/ec.md quotes the SRS tolerance table and the first generator rows.
// The golden files are what the tests check; the quotes must stay equal to
// them, so a change of either shows up here rather than as a stale doc.
func TestDocsQuoteGoldenFiles(t *testing.T) {
	doc, err := os.ReadFile("../docs/ec.md")
	if err != nil {
		t.Fatal(err)
	}
	tolerance, err := os.ReadFile("testdata/srs-tolerance.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, tolerance) {
		t.Error("docs/ec.md does not quote testdata/srs-tolerance.golden verbatim")
	}
	generator, err := os.ReadFile("testdata/generator.golden")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^    ([0-9a-f]{32})$`).FindAllSubmatch(doc, -1)
	if len(rows) == 0 {
		t.Fatal("docs/ec.md quotes no generator rows; update this test if that is intended")
	}
	for _, row := range rows {
		if !bytes.Contains(generator, append(row[1], '\n')) {
			t.Errorf("docs/ec.md quotes generator row %s, not in testdata/generator.golden", row[1])
		}
	}
}
