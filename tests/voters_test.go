package tests

import "time"

// waitControlPlane waits until node from's /status reports a quorum and
// want voters, all answering, as many as the map calls for.
func (c *testCluster) waitControlPlane(from, want int, timeout time.Duration) {
	c.t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		st, err := c.status(from)
		if err == nil && st.Quorum && st.Voters == want && st.VotersUp == want && st.VoterTarget == want {
			return
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("node %d's status: quorum %v, voters %d (%d up), target %d after %s; want %d (%v)",
				from, st.Quorum, st.Voters, st.VotersUp, st.VoterTarget, timeout, want, err)
		}
	}
}

// waitVotersGrown waits until node from's /status has a quorum and as
// many voters, all answering, as the map calls for: the leader has given
// the votes its schemes' tolerance wants (cluster.VoterTarget), so a test
// that picks victims by their vote sees the voters they will keep.
func (c *testCluster) waitVotersGrown(from int) {
	c.t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		st, err := c.status(from)
		if err == nil && st.Quorum && st.Voters == st.VoterTarget && st.VotersUp == st.VoterTarget {
			return
		}
		if time.Since(start) > 30*time.Second {
			c.t.Fatalf("node %d's status after 30 s: quorum %v, voters %d (%d up), target %d (%v)",
				from, st.Quorum, st.Voters, st.VotersUp, st.VoterTarget, err)
		}
	}
}
