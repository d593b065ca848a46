package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memgest/memgest/server"
)

// plan --addr models the cluster's actual zones as its hosts (decision
// 0021): three zones joined round robin alternate along the ring.
func TestPlanReadsTheClusterDomains(t *testing.T) {
	var st server.Status
	for i := range 9 {
		st.Nodes = append(st.Nodes, server.StatusNode{ID: fmt.Sprintf("%040x", i), State: "up", Zone: fmt.Sprintf("zone-%d", i%3+1)})
	}
	o := &planOptions{nodes: 9}
	if note := o.readDomains(st); !strings.Contains(note, "--host-mttf") || o.hosts != 0 {
		t.Fatalf("without --host-mttf: note %q, hosts %d", note, o.hosts)
	}
	o.hostMTTF = 8760
	note := o.readDomains(st)
	if o.hosts != 3 || !strings.Contains(note, "3 zones") {
		t.Fatalf("note %q, hosts %d", note, o.hosts)
	}
	c := o.cluster(nil)
	for i, d := range c.Hosts {
		if d != i%3 {
			t.Fatalf("ring domains %v, want alternating", c.Hosts)
		}
	}
}
