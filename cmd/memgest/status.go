package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/memgest/memgest/server"
	"github.com/memgest/memgest/server/commands"
	"github.com/memgest/memgest/server/core"
	"github.com/spf13/cobra"
)

func statusCmd() *cobra.Command {
	var o statusOptions
	var asJSON, watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a cluster's nodes, states, slots, schemes and per-scheme memory",
		Long: "Show a cluster's nodes, states, slots, schemes and per-scheme memory, as one node sees it.\n" +
			"Without --addr it shows the newest running `memgest dev` cluster, else asks 127.0.0.1:27001 (memgest server's default HTTP port).\n" +
			"With --watch the screen refreshes every --interval, with each node's commands per second, until Ctrl-C.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := o.client(os.Stderr)
			if err != nil {
				return err
			}
			fetch := func() (server.Status, error) {
				st, err := client.fetch()
				if err != nil {
					return st, fmt.Errorf("status from %s: %w%s", client.addr, err, o.hint())
				}
				return st, nil
			}
			if watch {
				if interval <= 0 {
					return fmt.Errorf("--interval must be positive, got %s", interval)
				}
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return watchStatus(ctx, os.Stdout, fetch, interval, time.Now)
			}
			st, err := fetch()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(os.Stdout, st)
			}
			printStatus(os.Stdout, st, nil)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "", "HTTP address (host:port) of any node (default: the running dev cluster, else "+defaultStatusAddr+")")
	f.StringVarP(&o.pass, "pass", "a", "", "the cluster's password, when it has one (default: $REDISCLI_AUTH)")
	f.StringVar(&o.caFile, "cacert", "", "CA certificate to verify a node's HTTPS with (nodes with --tls-cert-file serve HTTPS)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVarP(&watch, "watch", "w", false, "refresh every --interval until interrupted, with commands per second per node")
	f.DurationVar(&interval, "interval", time.Second, "refresh period of --watch")
	return cmd
}

// defaultStatusAddr is memgest server's default HTTP address.
const defaultStatusAddr = "127.0.0.1:27001"

// statusOptions say which node to ask and how.
type statusOptions struct {
	addr, pass, caFile string
	fromDev            bool // the address came from a running dev cluster
}

// client resolves the node to ask: --addr, else the newest running dev
// cluster (its password and CA too, unless given), else the default.
func (o *statusOptions) client(notes io.Writer) (*statusClient, error) {
	if o.pass == "" {
		o.pass = os.Getenv("REDISCLI_AUTH")
	}
	if o.addr == "" {
		o.addr = defaultStatusAddr
		if devs := liveDevStates(); len(devs) > 0 {
			d := devs[0]
			o.addr, o.fromDev = d.HTTP, true
			o.pass = cmp.Or(o.pass, d.Password)
			o.caFile = cmp.Or(o.caFile, d.CAFile)
			if len(devs) > 1 {
				fmt.Fprintf(notes, "memgest status: %d dev clusters run; showing the newest (base port %d); --addr picks another\n", len(devs), d.BasePort)
			}
		}
	}
	return newStatusClient(o.addr, o.caFile, o.pass)
}

// hint is what to try when the node did not answer.
func (o *statusOptions) hint() string {
	if o.fromDev || o.addr != defaultStatusAddr {
		return ""
	}
	return " (no running `memgest dev` cluster found; give a node's HTTP port with --addr host:port)"
}

// clearScreen moves the cursor home and clears the terminal (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// watchStatus redraws the status every interval until ctx ends. Each frame
// is built whole and written at once, so the terminal does not flicker; a
// failed fetch shows its error and the last status is kept for the next
// rates.
func watchStatus(ctx context.Context, out io.Writer, fetch func() (server.Status, error), interval time.Duration, now func() time.Time) error {
	var prev *sample
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		var frame bytes.Buffer
		frame.WriteString(clearScreen)
		fmt.Fprintf(&frame, "memgest status  %s  (every %s, Ctrl-C to stop)\n\n", now().Format("15:04:05"), interval)
		if st, err := fetch(); err != nil {
			fmt.Fprintf(&frame, "%v\n", err)
		} else {
			cur := &sample{at: now(), st: st}
			printStatus(&frame, st, cur.rates(prev))
			prev = cur
		}
		if _, err := out.Write(frame.Bytes()); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil // ended while this frame was drawn: no tick may win the select below
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// sample is one status and when it was taken.
type sample struct {
	at time.Time
	st server.Status
}

// rates returns each node's commands per second since prev, by node id;
// nil without an earlier sample.
func (s *sample) rates(prev *sample) map[string]float64 {
	if prev == nil {
		return nil
	}
	secs := s.at.Sub(prev.at).Seconds()
	if secs <= 0 {
		return nil
	}
	before := map[string]int64{}
	for _, n := range prev.st.Nodes {
		before[n.ID] = n.Commands
	}
	out := map[string]float64{}
	for _, n := range s.st.Nodes {
		if c, ok := before[n.ID]; ok && n.Commands >= c {
			out[n.ID] = float64(n.Commands-c) / secs
		}
	}
	return out
}

// headline is the status's first line: the cluster's state, epoch and
// Raft leader, or, when the answering node knows no leader, that the
// control plane has no quorum and what follows from it (issue 43: it
// said "cluster ok" while every key command answered CLUSTERDOWN). A node
// older than the quorum field names its leader all the same.
func headline(st server.Status) string {
	voters := fmt.Sprintf("%d of %d voters up, %d wanted", st.VotersUp, st.Voters, st.VoterTarget)
	if !st.Quorum && st.Leader == "" {
		return fmt.Sprintf("cluster DOWN: NO RAFT QUORUM  epoch %d  map %s  no leader for %.1fs (%s); "+
			"the map cannot change and key commands answer CLUSTERDOWN once leases lapse",
			st.Epoch, st.State, st.NoLeaderSeconds, voters)
	}
	return fmt.Sprintf("cluster %s  epoch %d  raft leader %s (%s)", st.State, st.Epoch, st.Leader, voters)
}

// printStatus writes st as tables; with rates (commands per second by
// node id, from --watch) each node's line shows its rate.
func printStatus(out io.Writer, st server.Status, rates map[string]float64) {
	fmt.Fprintln(out, headline(st))
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tADDRESS\tZONE\tSTATE\tPHASE\tSERVING\tVOTER\tSLOTS\tKEYS\tBYTES\tCMDS/S\t")
	for _, n := range st.Nodes {
		rate := "-"
		if r, ok := rates[n.ID]; ok {
			rate = fmt.Sprintf("%.0f", r)
		}
		zone := n.Zone
		if zone == "" {
			zone = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%v\t%v\t%d\t%d\t%d\t%s\t%s\n", n.ID[:12], n.ClientAddr, zone, n.State, n.Phase, n.Serving, n.Voter, n.Slots, n.Keys, n.Bytes, rate, n.Error)
	}
	w.Flush()
	fmt.Fprintln(out)
	fmt.Fprintln(w, "SCHEME\tSPEC\tDEFAULT\tTOLERATES\tKEYS\tLOGICAL\tSTORED\tOVERHEAD")
	for _, s := range st.Schemes {
		fmt.Fprintf(w, "%s\t%s\t%v\t%d\t%d\t%d\t%d\t%.2fx\n", s.Name, s.Spec, s.Default, s.Tolerance, s.Keys, s.Logical, s.Stored, s.Overhead)
	}
	w.Flush()
	printProgress(out, "REBUILD", st.Rebuild, st.ShardsRebuilding)
	printProgress(out, "MIGRATE", st.Migration, st.ShardsImporting)
	if st.Rebalance != "" {
		fmt.Fprintf(out, "REBALANCE %s\n", st.Rebalance)
	}
	if st.LostCount > 0 {
		fmt.Fprintf(out, "\nLOST KEYS: %d beyond their scheme's tolerance (GET answers -LOST; SET or DEL clears)\n", st.LostCount)
		for _, k := range st.Lost {
			what := fmt.Sprintf("lost %d of %d pieces", k.Lost, k.Total)
			if k.Cause != "" { // a slot range nothing surviving names
				what = k.Cause
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\n", k.Key, k.Scheme, what)
		}
		w.Flush()
	}
}

// printProgress shows the progress of a sort of work (what: REBUILD,
// MIGRATE): a bar, keys and bytes done, rate and ETA while shards are
// at it (left), a one-line summary once done.
func printProgress(out io.Writer, what string, r core.ProgressReport, left int) {
	if r.KeysTotal == 0 && left == 0 {
		return
	}
	if left == 0 {
		fmt.Fprintf(out, "\n%s done: %d keys, %s in %.1fs\n", what, r.KeysDone, commands.HumanBytes(r.BytesDone), r.Seconds)
		return
	}
	const width = 30
	frac := 0.0
	if r.KeysTotal > 0 {
		frac = float64(r.KeysDone) / float64(r.KeysTotal)
	}
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat("-", width-int(frac*width))
	fmt.Fprintf(out, "\n%s [%s] %3.0f%%  keys %d/%d  %s  %s/s  ETA %s  (%d shards left)\n",
		what, bar, frac*100, r.KeysDone, r.KeysTotal, commands.HumanBytes(r.BytesDone), commands.HumanBytes(int64(r.Rate())), r.ETA().Round(time.Second), left)
	printPending(out, r.PendingBytes)
}

// printPending shows the bytes still to rebuild by redundancy left, if
// any: the pieces of keys that survive no more failures first.
func printPending(out io.Writer, byLevel []int64) {
	var parts []string
	var sum int64
	for level, b := range byLevel {
		sum += b
		parts = append(parts, fmt.Sprintf("%d: %s", level, commands.HumanBytes(b)))
	}
	if sum > 0 {
		fmt.Fprintf(out, "  still to rebuild, by failures the keys survive until then: %s\n", strings.Join(parts, "  "))
	}
}
