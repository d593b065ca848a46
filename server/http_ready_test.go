package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
)

// TestReadyEndpoint: GET /ready answers 200 "ready" only when the cluster
// has formed, this node is up or spare with a fresh lease, and neither
// recovers a shard's records nor holds a position awaiting a rebuild;
// otherwise 503 and the reason in a line (what a Kubernetes readiness
// probe and the PodDisruptionBudget built on it need).
func TestReadyEndpoint(t *testing.T) {
	id := func(i int) cluster.NodeID { return cluster.NodeID(fmt.Sprintf("%040x", i+1)) } // testMap's node i
	spare := cluster.Node{ID: id(8), ClientAddr: "127.0.0.1:7900", PeerAddr: "127.0.0.1:17900"}
	// withSpare: a formed map of three nodes and a spare that replaced
	// node 0 (the coordinator of shard 0).
	withSpare := func(t *testing.T) *cluster.Map {
		return mustApply(t, mustApply(t, testMap(t, 3), cluster.AddNode{Node: spare}), cluster.MarkFailed{ID: id(0)})
	}
	for _, tc := range []struct {
		name string
		m    func(t *testing.T) *cluster.Map
		self cluster.NodeID
		node func(n *Node) // what happened to the node
		code int
		body string // the answer's first word
	}{
		{name: "formed", m: func(t *testing.T) *cluster.Map { return testMap(t, 3) }, self: id(1), code: 200, body: "ready"},
		{name: "forming", self: id(0), code: 503, body: "forming",
			m: func(t *testing.T) *cluster.Map {
				return mustApply(t, cluster.NewMap(3, 3), cluster.AddNode{Node: testMap(t, 3).Nodes[0]})
			}},
		{name: "not in the map", m: func(t *testing.T) *cluster.Map { return testMap(t, 3) }, self: id(7), code: 503, body: "not a member"},
		{name: "failed", self: id(1), code: 503, body: "failed",
			m: func(t *testing.T) *cluster.Map { return mustApply(t, testMap(t, 3), cluster.MarkFailed{ID: id(1)}) }},
		{name: "fenced", m: func(t *testing.T) *cluster.Map { return testMap(t, 3) }, self: id(1), code: 503, body: "fenced",
			node: func(n *Node) { n.fence() }},
		{name: "lease lapsed", m: func(t *testing.T) *cluster.Map { return testMap(t, 3) }, self: id(1), code: 503, body: "lease lapsed",
			node: func(n *Node) { n.Lease.Until.Store(0) }},
		// Issue 43: two of three voters dead, no leader for good; the
		// lease lapses too, but the reason is the control plane's.
		{name: "no leader past the failure timeout", m: func(t *testing.T) *cluster.Map { return testMap(t, 3) }, self: id(1), code: 503,
			body: "no quorum", node: func(n *Node) {
				n.Cfg.FailureTimeout = time.Second
				n.leaders.look(false, n.MonoNow()-int64(2*time.Second))
				n.Lease.Until.Store(0)
			}},
		{name: "no leader during an election", m: func(t *testing.T) *cluster.Map { return testMap(t, 3) }, self: id(1), code: 200,
			body: "ready", node: func(n *Node) {
				n.Cfg.FailureTimeout = time.Hour
				n.leaders.look(false, n.MonoNow())
			}},
		{name: "a leader again", m: func(t *testing.T) *cluster.Map { return testMap(t, 3) }, self: id(1), code: 200,
			body: "ready", node: func(n *Node) {
				n.Cfg.FailureTimeout = time.Second
				n.leaders.look(false, n.MonoNow()-int64(2*time.Second))
				n.leaders.look(true, n.MonoNow())
			}},
		{name: "rejoined, its positions rebuilding", self: id(1), code: 503, body: "rebuilding",
			m: func(t *testing.T) *cluster.Map {
				return mustApply(t, mustApply(t, testMap(t, 3), cluster.MarkFailed{ID: id(1)}), cluster.Rejoin{ID: id(1)})
			}},
		{name: "spare recovering the failed coordinator's shard", m: withSpare, self: spare.ID, code: 503, body: "recovering"},
		{name: "spare recovered, its positions rebuilding", self: spare.ID, code: 503, body: "rebuilding",
			m: func(t *testing.T) *cluster.Map {
				m := withSpare(t)
				for i := range m.Shards {
					if m.Shards[i].Recovering {
						m = mustApply(t, m, cluster.ShardRecovered{Shard: i, By: spare.ID})
					}
				}
				if p := m.Phase(spare.ID); p != "degraded" {
					t.Fatalf("setup: the spare's phase is %s; the case is for a node whose Phase hides its rebuild", p)
				}
				return m
			}},
		{name: "spare rebuilt", m: func(t *testing.T) *cluster.Map { return rebuilt(t, withSpare(t)) }, self: spare.ID, code: 200, body: "ready"},
		{name: "standing in for a failed node", self: id(3), code: 200, body: "ready",
			m: func(t *testing.T) *cluster.Map {
				m := mustApply(t, testMap(t, 4), cluster.MarkFailed{ID: id(1)})
				if !slices.ContainsFunc(m.Shards, func(sh cluster.Shard) bool {
					return slices.ContainsFunc(sh.StandIns, func(s cluster.StandIn) bool { return s.Node == id(3) && slices.Contains(sh.Rebuild, s.Pos) })
				}) {
					t.Fatal("setup: node 3 stands in for no position awaiting a rebuild")
				}
				return m
			}},
		// Maps written before retired shards were passed over (and
		// takePlaces still) list rebuilds in retired shards, which
		// nothing clears: Map.Phase says coordinated-normal for ever.
		{name: "retired shard lists a rebuild", self: id(1), code: 200, body: "ready",
			m: func(t *testing.T) *cluster.Map {
				m := testMap(t, 4)
				src := m.Shards[0]
				c, _ := m.CoordinatorOf(&src)
				p := src.Placement
				m = mustApply(t, m, cluster.Migrate{From: 0, First: src.First, Last: src.Last, Placement: []cluster.NodeID{p[1], p[2], p[3], p[0]}})
				m = mustApply(t, m, cluster.MigrationDone{Shard: len(m.Shards) - 1, By: c.ID})
				m = withRetiredRebuild(t, m, slices.Index(src.Placement, id(1)))
				if p := m.Phase(id(1)); p != "coordinated-normal" {
					t.Fatalf("setup: node 1's phase is %s", p)
				}
				return m
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := leasedNode(t, tc.m(t))
			n.NodeID = tc.self
			if tc.node != nil {
				tc.node(n)
			}
			code, body := get(t, n.httpRoutes(), http.MethodGet, "/ready", "")
			if code != tc.code || !strings.HasPrefix(body, tc.body) || strings.Count(body, "\n") != 1 {
				t.Fatalf("got %d %q, want %d %q…", code, body, tc.code, tc.body)
			}
			if strings.Contains(body, string(tc.self)) || strings.Contains(body, "127.0.0.1") {
				t.Fatalf("the answer names the node: %q", body)
			}
		})
	}
}

// TestReadyNeedsNoPasswordAndOnlyGET: /ready answers without the
// cluster's password, which /status needs, and only to GET (and HEAD).
func TestReadyNeedsNoPasswordAndOnlyGET(t *testing.T) {
	p, err := cluster.NewPassword("sesame")
	if err != nil {
		t.Fatal(err)
	}
	m := mustApply(t, testMap(t, 3), cluster.SetPassword{Password: p})
	n := leasedNode(t, m)
	n.NodeID = m.Nodes[0].ID
	h := n.httpRoutes()
	if code, body := get(t, h, http.MethodGet, "/ready", ""); code != 200 || body != "ready\n" {
		t.Fatalf("GET /ready without a password: %d %q", code, body)
	}
	if code, _ := get(t, h, http.MethodHead, "/ready", ""); code != 200 {
		t.Fatalf("HEAD /ready: %d", code)
	}
	if code, _ := get(t, h, http.MethodGet, "/status", ""); code != http.StatusUnauthorized {
		t.Fatalf("GET /status without a password: %d, want 401", code)
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if code, _ := get(t, h, method, "/ready", ""); code != http.StatusMethodNotAllowed {
			t.Fatalf("%s /ready: %d, want 405", method, code)
		}
	}
}

// withRetiredRebuild is m, whose shard 0 is retired, with position pos of
// that shard listed for rebuild.
func withRetiredRebuild(t *testing.T, m *cluster.Map, pos int) *cluster.Map {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	sh := raw["shards"].([]any)[0].(map[string]any)
	if sh["retired"] != true {
		t.Fatal("setup: shard 0 is not retired")
	}
	sh["rebuild"], sh["rebuild_round"] = []int{pos}, 1
	if b, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	out, err := cluster.UnmarshalMap(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// get serves one request and returns the status code and body.
func get(t *testing.T, h http.Handler, method, path, pass string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if pass != "" {
		req.SetBasicAuth("default", pass)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// rebuilt ends every recovery and rebuild of m's shards with slots, as
// their coordinators would.
func rebuilt(t *testing.T, m *cluster.Map) *cluster.Map {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for m.RecoveringShards() > 0 || m.RebuildingShards() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("setup: the repairs do not end")
		}
		for i := range m.Shards {
			sh := m.Shards[i]
			c, ok := m.CoordinatorOf(&sh)
			switch {
			case sh.Retired || !ok:
			case sh.Recovering:
				m = mustApply(t, m, cluster.ShardRecovered{Shard: i, By: c.ID})
			case len(sh.Rebuild) > 0:
				m = mustApply(t, m, cluster.RebuildDone{Shard: i, By: c.ID, Positions: sh.Rebuild, Round: sh.RebuildRound})
			}
		}
	}
	return m
}
