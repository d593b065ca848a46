package transport

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// docs/transport.md shows one encoded frame byte by byte; it must stay what
// AppendFrame produces, so a format change cannot leave the doc behind.
func TestDocsExampleFrame(t *testing.T) {
	doc, err := os.ReadFile("../docs/transport.md")
	if err != nil {
		t.Fatal(err)
	}
	enc := AppendFrame(nil, Frame{Type: 0x10, Flags: FlagResponse, Epoch: 7, ID: 42, Payload: []byte("hello")})
	var dump bytes.Buffer
	dump.WriteString("```\n")
	for i := 0; i < len(enc); i += 8 {
		fmt.Fprintf(&dump, "% x\n", enc[i:min(i+8, len(enc))])
	}
	dump.WriteString("```\n")
	if !bytes.Contains(doc, dump.Bytes()) {
		t.Errorf("docs/transport.md does not show the example frame as encoded:\n%s", dump.Bytes())
	}
	if !bytes.Contains(doc, []byte(fmt.Sprintf("`0x%X`", Version))) {
		t.Errorf("docs/transport.md does not name the version byte 0x%X", Version)
	}
}
