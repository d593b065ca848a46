package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memgest/memgest/server"
	"github.com/spf13/cobra"
)

func statusCmd() *cobra.Command {
	var addr string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a cluster's nodes, states, slots, schemes and per-scheme memory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := fetchStatus("http://" + addr + "/status")
			if err != nil {
				return fmt.Errorf("status from %s: %w", addr, err)
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printStatus(st)
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:27001", "HTTP address (host:port) of any node")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printStatus(st server.Status) {
	fmt.Printf("cluster %s  epoch %d  raft leader %s\n\n", st.State, st.Epoch, st.Leader)
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tADDRESS\tSTATE\tPHASE\tSERVING\tVOTER\tSLOTS\tKEYS\tBYTES\t")
	for _, n := range st.Nodes {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%v\t%v\t%d\t%d\t%d\t%s\n", n.ID[:12], n.ClientAddr, n.State, n.Phase, n.Serving, n.Voter, n.Slots, n.Keys, n.Bytes, n.Error)
	}
	w.Flush()
	fmt.Println()
	fmt.Fprintln(w, "SCHEME\tSPEC\tDEFAULT\tTOLERATES\tKEYS\tLOGICAL\tSTORED\tOVERHEAD")
	for _, s := range st.Schemes {
		fmt.Fprintf(w, "%s\t%s\t%v\t%d\t%d\t%d\t%d\t%.2fx\n", s.Name, s.Spec, s.Default, s.Tolerance, s.Keys, s.Logical, s.Stored, s.Overhead)
	}
	w.Flush()
	printRebuild(st)
	if st.LostCount > 0 {
		fmt.Printf("\nLOST KEYS: %d beyond their scheme's tolerance (GET answers -LOST; SET or DEL clears)\n", st.LostCount)
		for _, k := range st.Lost {
			fmt.Fprintf(w, "  %s\t%s\tlost %d of %d pieces\n", k.Key, k.Scheme, k.Lost, k.Total)
		}
		w.Flush()
	}
}

// printRebuild shows rebuild progress: a bar, keys and bytes done, rate and
// ETA while shards are rebuilding, a one-line summary once done.
func printRebuild(st server.Status) {
	r := st.Rebuild
	if r.KeysTotal == 0 && st.ShardsRebuilding == 0 {
		return
	}
	if st.ShardsRebuilding == 0 {
		fmt.Printf("\nREBUILD done: %d keys, %s in %.1fs\n", r.KeysDone, server.HumanBytes(r.BytesDone), r.Seconds)
		return
	}
	const width = 30
	frac := 0.0
	if r.KeysTotal > 0 {
		frac = float64(r.KeysDone) / float64(r.KeysTotal)
	}
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat("-", width-int(frac*width))
	fmt.Printf("\nREBUILD [%s] %3.0f%%  keys %d/%d  %s  %s/s  ETA %s  (%d shards left)\n",
		bar, frac*100, r.KeysDone, r.KeysTotal, server.HumanBytes(r.BytesDone), server.HumanBytes(int64(r.Rate())), r.ETA().Round(time.Second), st.ShardsRebuilding)
}
