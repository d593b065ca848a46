package repair

import (
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/hybrid"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
	"github.com/memgest/memgest/scheme/none"
	"github.com/memgest/memgest/scheme/rep"
	"github.com/memgest/memgest/scheme/split"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/core"
)

// testMap is a formed map of n nodes with rep:3 and split:2+1 registered.
func testMap(t *testing.T, n int) *cluster.Map { return kindtest.Map(t, n, "rep:3", "split:2+1") }

// schemeID is the id of m's scheme name.
func schemeID(t *testing.T, m *cluster.Map, name string) uint16 { return kindtest.Entry(t, m, name).ID }

// tableOf binds m's catalogue without a node, for the kinds' properties.
func tableOf(t *testing.T, m *cluster.Map) *core.SchemeTable {
	t.Helper()
	kinds := kind.Registry{none.Kind: none.New, rep.Kind: rep.New, split.Kind: split.New, stripe.Kind: stripe.New, hybrid.Kind: hybrid.New}
	return core.BindTable(kinds, m, nil, nil, func(e cluster.SchemeEntry, err error) { t.Fatalf("%s: %v", e.Name(), err) })
}
