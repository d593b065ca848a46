package cluster

import "slices"

// This file decides how many Raft voters the control plane has and which
// nodes they are (issue 43, item 4; decision 0018). The control plane
// must survive every failure the data survives: a cluster whose schemes
// tolerate two failures keeps serving after any two nodes die only if
// losing two voters leaves a quorum, which takes five voters. Nothing here
// changes Raft: the leader's loop (server/voters.go) and the failure
// detector (server/failure.go) ask these functions and make the changes
// through control.Plane, recording them with SetVoters.

// MaxVoters is the most Raft voters a map calls for: seven, whose quorum
// of four survives three failures. Every commit waits for a quorum and the
// leader sends every entry and heartbeat to each voter, so a larger group
// costs every map change more for failures beyond what any scheme but the
// widest codes (split:8+4, rep:5) tolerates.
const MaxVoters = 7

// ValidVoters says whether v is a Raft voter count memgest allows as the
// founding node's --voters: 1, 3, 5 or 7.
func ValidVoters(v int) bool { return v == 1 || v == 3 || v == 5 || v == 7 }

// VoterTarget is how many Raft voters m calls for: the smallest odd count
// whose quorum outlives as many failures as the most tolerant scheme of
// m's catalogue (2t+1 voters for t failures: rep:3 and stripe:4+2 call
// for five), never fewer than m.Voters (the founding node's --voters), at
// most MaxVoters, and no more than the largest odd count of the nodes
// that can vote (CanVote). An even count would be worse than the odd one
// below it: four voters survive one failure, as three do, but three leave
// a fourth node whose failure costs no vote.
//
// It counts the nodes that can vote now, so it falls when nodes fail or
// drain; the leader only ever adds votes to meet it, and takes none from
// a live node (decision 0018).
func VoterTarget(m *Map) int {
	want := min(max(2*m.maxTolerance()+1, m.Voters), MaxVoters)
	can := m.canVoteCount()
	if can%2 == 0 {
		can--
	}
	return max(min(want, can), 0)
}

// CanVote says whether n may be given a vote: it is up or a spare (a
// spare is a Raft member like any other node, holding nothing yet) and
// not draining (it is leaving).
func (n Node) CanVote() bool {
	return (n.State == Up || n.State == Spare) && !n.Draining
}

// VoterCount is how many nodes m flags as Raft voters, failed ones
// included: a failed voter's vote counts until it passes to an heir
// (VoterHeir), so that growing the group and replacing a voter never
// both fill one place.
func (m *Map) VoterCount() int {
	count := 0
	for _, n := range m.Nodes {
		if n.Voter {
			count++
		}
	}
	return count
}

// VoterPromotions lists the nodes to give a vote to in m, best first: as
// many as VoterTarget wants beyond m's voters (VoterCount), in the order
// of the candidates' ranking, up to the first that live does not vouch
// for (not heard from recently). A vote is never given past a better
// candidate that may only be slow to report: a dead one is marked failed
// within the failure timeout and then leaves the ranking, so the group
// grows the same way whatever the timing. The leader promotes them one at
// a time, asking again after each change.
func VoterPromotions(m *Map, live func(NodeID) bool) []Node {
	need := VoterTarget(m) - m.VoterCount()
	var out []Node
	for _, n := range voterCandidates(m, "") {
		if len(out) == need || !live(n.ID) {
			break
		}
		out = append(out, n)
	}
	return out
}

// VoterHeir is the node that takes the vote of leaving (a failed voter, or
// a drained one): the best candidate other than leaving that live vouches
// for. Unlike a promotion, a vote to pass on does not wait for a better
// candidate to report. false when no node can take it.
func VoterHeir(m *Map, leaving NodeID, live func(NodeID) bool) (Node, bool) {
	for _, n := range voterCandidates(m, leaving) {
		if live(n.ID) {
			return n, true
		}
	}
	return Node{}, false
}

// VoterCandidateCount is how many nodes other than leaving could take a
// vote (voterCandidates), live or not.
func (m *Map) VoterCandidateCount(leaving NodeID) int {
	return len(voterCandidates(m, leaving))
}

// voterCandidates ranks the nodes that may take a vote, best first: the
// non-voters other than skip that can vote (CanVote), the one placement
// rule's way (decision 0021): first those whose zone, then whose host,
// holds the fewest live voters, then in join order. This is the one place
// that chooses where votes sit, so that losing a zone costs as few votes
// as the nodes allow: five voters over three zones sit two, two and one.
func voterCandidates(m *Map, skip NodeID) []Node {
	voting := newCrowd()
	var out []Node
	for _, n := range m.Nodes {
		switch {
		case n.Voter && n.State != Failed:
			voting.add(n)
		case !n.Voter && n.ID != skip && n.CanVote():
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b Node) int {
		switch {
		case voting.less(a, b):
			return -1
		case voting.less(b, a):
			return 1
		}
		return 0
	})
	return out
}

// maxTolerance is the most failures a scheme of m's catalogue survives.
func (m *Map) maxTolerance() int {
	t := 0
	for _, e := range m.Schemes {
		t = max(t, e.Spec.Tolerance())
	}
	return t
}

// canVoteCount is how many nodes of m can vote (CanVote).
func (m *Map) canVoteCount() int {
	count := 0
	for _, n := range m.Nodes {
		if n.CanVote() {
			count++
		}
	}
	return count
}
