// Command memgest is the memgest binary: `memgest server` runs one node,
// `memgest dev` a local cluster, `memgest status` shows a cluster.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "memgest:", err)
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "memgest",
		Short:         "A distributed in-memory key-value store where every key carries its own resilience",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serverCmd(), devCmd(), statusCmd(), planCmd(), clusterCmd(), versionCmd())
	return root
}
