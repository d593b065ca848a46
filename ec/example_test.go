package ec_test

import (
	"fmt"

	"github.com/memgest/memgest/ec"
)

// Encode an object as RS(4,2), lose two shards, rebuild them, then update one
// data shard and patch the parities from the delta alone.
func Example() {
	codec, err := ec.New(4, 2)
	if err != nil {
		panic(err)
	}
	shards := [][]byte{
		[]byte("memg"), []byte("est "), []byte("shar"), []byte("ds!!"),
		make([]byte, 4), make([]byte, 4), // parity, filled by Encode
	}
	if err := codec.Encode(shards); err != nil {
		panic(err)
	}

	shards[1], shards[4] = nil, nil // two nodes fail
	if err := codec.Reconstruct(shards); err != nil {
		panic(err)
	}
	fmt.Printf("rebuilt: %s%s%s%s\n", shards[0], shards[1], shards[2], shards[3])

	// Data shard 2 changes; each parity node applies coef·(old⊕new) itself.
	next := []byte("SHAR")
	delta := make([]byte, 4)
	if err := ec.Delta(delta, shards[2], next); err != nil {
		panic(err)
	}
	copy(shards[2], next)
	for j := range codec.M() {
		if err := codec.UpdateParity(j, 2, delta, shards[4+j]); err != nil {
			panic(err)
		}
	}
	ok, _ := codec.Verify(shards)
	fmt.Println("parity matches after delta:", ok)

	shards[0], shards[1], shards[2] = nil, nil, nil
	fmt.Println(codec.Reconstruct(shards))
	// Output:
	// rebuilt: memgest shards!!
	// parity matches after delta: true
	// ec: too many shards lost: RS(4,2) lost 3 of 6 shards [0 1 2], tolerates 2
}

// The stretched code SRS(2,1,3) of Ring §3.3: three data nodes hold two
// blocks each of a six-block row; the row forms three RS(2,1) stripes.
func ExampleLayout() {
	layout, err := ec.NewLayout(2, 1, 3)
	if err != nil {
		panic(err)
	}
	for node := range layout.S() {
		for block := range layout.DataBlocksPerNode() {
			a, _ := layout.Locate(node, block)
			fmt.Printf("data node %d block %d: stripe %d position %d\n", node, block, a.Stripe, a.Position)
		}
	}
	nodes, _ := layout.StripeNodes(1)
	fmt.Println("stripe 1 data nodes:", nodes)
	fmt.Println(layout.Survives([]int{0, 3})) // a data node and the parity node
	// Output:
	// data node 0 block 0: stripe 0 position 0
	// data node 0 block 1: stripe 1 position 0
	// data node 1 block 0: stripe 2 position 0
	// data node 1 block 1: stripe 0 position 1
	// data node 2 block 0: stripe 1 position 1
	// data node 2 block 1: stripe 2 position 1
	// stripe 1 data nodes: [0 2]
	// false <nil>
}
