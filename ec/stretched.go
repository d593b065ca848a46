package ec

import (
	"fmt"
	"math"
)

// Layout is the block layout of the stretched Reed-Solomon code SRS(k, m, s)
// of Ring §3.3: data encoded with RS(k, m) but spread over s ≥ k data nodes,
// so that codes with different k share one key-to-node mapping.
//
// With l = lcm(k, s), the data is cut into rows of l blocks D̃_1..D̃_l
// (equation 2). RS data position i (0-based) holds blocks i·l/k .. (i+1)·l/k−1
// of each row, so a row holds l/k stripes and stripe r takes block
// i·l/k + r from every position i. Stretching reassigns whole blocks: data node
// n holds blocks n·l/s .. (n+1)·l/s−1 of each row. Parity nodes are not
// stretched: parity node j holds parity j of every stripe, l/k blocks per row.
//
// All indices are 0-based; the paper's D̃_{g+1} is row offset g. A node's
// blocks are numbered from 0 across rows (its "node-local block number"):
// data node n's block b is offset n·l/s + b mod l/s of row b / (l/s). Nodes
// are numbered as in Survives: data nodes 0..s−1, parity nodes s..s+m−1.
// SRS(k, m, k) is plain RS(k, m): one block per node per row, one stripe.
// The zero Layout is not usable; get one from NewLayout.
type Layout struct {
	k, m, s int
	rowLen  int // l = lcm(k, s)
}

// Addr locates a data block in the code: the row, the stripe within the row,
// and the RS data position (the data shard index in that stripe's codeword).
type Addr struct {
	Row, Stripe, Position int
}

// NewLayout returns the layout of SRS(k, m, s). It requires 1 ≤ k ≤ s,
// 0 ≤ m and s+m ≤ MaxShards: like shard indices, node numbers fit in a byte,
// and a row stays at most lcm(k, s) ≤ 254·255 blocks.
func NewLayout(k, m, s int) (Layout, error) {
	if err := validateCode(k, m); err != nil {
		e := err.(*ParamError)
		e.S, e.Stretched = s, true
		return Layout{}, e
	}
	switch {
	case s < k:
		return Layout{}, &ParamError{K: k, M: m, S: s, Stretched: true, Reason: "needs at least k data nodes"}
	case s > MaxShards-m: // s+m > MaxShards, without overflow
		return Layout{}, &ParamError{K: k, M: m, S: s, Stretched: true, Reason: fmt.Sprintf("s+m must be at most %d", MaxShards)}
	}
	return Layout{k: k, m: m, s: s, rowLen: k / gcd(k, s) * s}, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// K returns the number of data blocks in a stripe.
func (l Layout) K() int { return l.k }

// M returns the number of parity blocks in a stripe.
func (l Layout) M() int { return l.m }

// S returns the number of data nodes.
func (l Layout) S() int { return l.s }

// String names the code, e.g. "SRS(2,1,3)".
func (l Layout) String() string { return fmt.Sprintf("SRS(%d,%d,%d)", l.k, l.m, l.s) }

// RowLen returns l = lcm(k, s), the number of data blocks in a row.
func (l Layout) RowLen() int { return l.rowLen }

// DataBlocksPerNode returns l/s, the blocks each data node holds per row.
func (l Layout) DataBlocksPerNode() int { return l.rowLen / l.s }

// StripesPerRow returns l/k, the stripes in a row; it is also the number of
// blocks each parity node holds per row.
func (l Layout) StripesPerRow() int { return l.rowLen / l.k }

// MaxRow is the largest row number the layout addresses: every block number
// of every row up to it fits in an int.
func (l Layout) MaxRow() int { return math.MaxInt/l.rowLen - 1 }

// Locate maps data node node's node-local block number block to its place in
// the code.
func (l Layout) Locate(node, block int) (Addr, error) {
	if node < 0 || node >= l.s {
		return Addr{}, indexError("data node", node, l.s)
	}
	if err := l.checkBlock(block, l.DataBlocksPerNode()); err != nil {
		return Addr{}, err
	}
	perNode, perPos := l.DataBlocksPerNode(), l.StripesPerRow()
	g := node*perNode + block%perNode // block index within the row
	return Addr{Row: block / perNode, Stripe: g % perPos, Position: g / perPos}, nil
}

// DataBlock is the inverse of Locate: the data node holding a, and its
// node-local block number there.
func (l Layout) DataBlock(a Addr) (node, block int, err error) {
	if err := l.checkAddr(a); err != nil {
		return 0, 0, err
	}
	perNode := l.DataBlocksPerNode()
	g := l.rowOffset(a.Stripe, a.Position)
	return g / perNode, a.Row*perNode + g%perNode, nil
}

// rowOffset returns where in its row the block at (stripe, position) lies:
// position i holds offsets i·l/k .. (i+1)·l/k−1 (equation 2).
func (l Layout) rowOffset(stripe, position int) int {
	return position*l.StripesPerRow() + stripe
}

func (l Layout) checkAddr(a Addr) error {
	switch {
	case a.Row < 0 || a.Row > l.MaxRow():
		return fmt.Errorf("%w: row %d not in [0,%d]", ErrIndex, a.Row, l.MaxRow())
	case a.Stripe < 0 || a.Stripe >= l.StripesPerRow():
		return indexError("stripe", a.Stripe, l.StripesPerRow())
	case a.Position < 0 || a.Position >= l.k:
		return indexError("position", a.Position, l.k)
	}
	return nil
}

// ParityBlock returns the block number at which every parity node holds its
// parity of the given stripe of the given row.
func (l Layout) ParityBlock(row, stripe int) (int, error) {
	if err := l.checkAddr(Addr{Row: row, Stripe: stripe}); err != nil {
		return 0, err
	}
	return row*l.StripesPerRow() + stripe, nil
}

// ParityStripe is the inverse of ParityBlock.
func (l Layout) ParityStripe(block int) (row, stripe int, err error) {
	if err := l.checkBlock(block, l.StripesPerRow()); err != nil {
		return 0, 0, err
	}
	return block / l.StripesPerRow(), block % l.StripesPerRow(), nil
}

// checkBlock validates a node-local block number on a node that holds
// perRow blocks of each row.
func (l Layout) checkBlock(block, perRow int) error {
	if block < 0 || block/perRow > l.MaxRow() {
		return fmt.Errorf("%w: block %d not in [0,%d)", ErrIndex, block, (l.MaxRow()+1)*perRow)
	}
	return nil
}

// StripeNodes returns, for each data position of the given stripe, the data
// node holding it. The answer is the same in every row, and the nodes are
// distinct: positions are l/k ≥ l/s blocks apart within a row.
func (l Layout) StripeNodes(stripe int) ([]int, error) {
	if err := l.checkAddr(Addr{Stripe: stripe}); err != nil {
		return nil, err
	}
	nodes := make([]int, l.k)
	for pos := range nodes {
		nodes[pos] = l.rowOffset(stripe, pos) / l.DataBlocksPerNode()
	}
	return nodes, nil
}

// MaxLost returns the largest number of blocks that any one stripe loses
// when the given nodes fail (data nodes 0..s−1, parity nodes s..s+m−1;
// repeats are ignored). Every stripe decodes while MaxLost ≤ m.
func (l Layout) MaxLost(failed []int) (int, error) {
	down := make([]bool, l.s+l.m)
	parityDown := 0
	for _, n := range failed {
		if n < 0 || n >= len(down) {
			return 0, indexError("node", n, len(down))
		}
		if !down[n] && n >= l.s {
			parityDown++
		}
		down[n] = true
	}
	worst := 0
	for stripe := range l.StripesPerRow() {
		nodes, _ := l.StripeNodes(stripe)
		lost := parityDown
		for _, n := range nodes {
			if down[n] {
				lost++
			}
		}
		worst = max(worst, lost)
	}
	return worst, nil
}

// Survives reports whether every stripe can still be decoded after the given
// nodes fail. SRS(k, m, s) survives any m failures, and some larger sets when
// the failed data nodes hold blocks of different stripes (Ring §3.3).
func (l Layout) Survives(failed []int) (bool, error) {
	worst, err := l.MaxLost(failed)
	if err != nil {
		return false, err
	}
	return worst <= l.m, nil
}
