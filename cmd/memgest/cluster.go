package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// clusterCmd groups the commands that grow and shrink a running cluster
// (decision 0016). Each sends one of memgest's own commands (NODE.PROMOTE,
// NODE.DRAIN, REBALANCE) to a node's client port; the Raft leader then
// drives the migrations, which `memgest status` follows.
func clusterCmd() *cobra.Command {
	var o clusterOptions
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Grow or shrink a running cluster: add-node, rebalance, remove-node",
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.addr, "addr", "", "client address (host:port) of any node (default: the running dev cluster's first node, else "+defaultClientAddr+")")
	f.StringVarP(&o.pass, "pass", "a", "", "the cluster's password, when it has one (default: $REDISCLI_AUTH)")
	f.StringVar(&o.caFile, "cacert", "", "CA certificate to verify a node's TLS with (nodes with --tls-cert-file)")
	f.Var(bytesValue{&o.rate}, "rate", "bytes per second each migration's source moves, e.g. 64mb (default: the running rebalance's, else 64 MiB/s)")
	f.IntVar(&o.parallel, "parallel", 0, "migrations at once (default: the running rebalance's, else 2)")
	cmd.AddCommand(addNodeCmd(&o), rebalanceCmd(&o), removeNodeCmd(&o))
	return cmd
}

// defaultClientAddr is memgest server's default client address.
const defaultClientAddr = "127.0.0.1:7001"

// clusterOptions say which node to ask, how, and a rebalance's settings.
type clusterOptions struct {
	addr, pass, caFile string
	rate               float64
	parallel           int
}

func addNodeCmd(o *clusterOptions) *cobra.Command {
	var noRebalance bool
	cmd := &cobra.Command{
		Use:   "add-node NODE",
		Short: "Make a spare a data node (by id, client or peer address) and rebalance slots onto it",
		Long: "Make a node that joined as a spare (memgest server --join ...) a data node, then start a rebalance\n" +
			"that moves slots onto it while they serve (unless --no-rebalance). Follow it with memgest status --watch.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.send(cmd.Context(), os.Stdout, "NODE.PROMOTE", args[0]); err != nil {
				return err
			}
			if noRebalance {
				return nil
			}
			return o.send(cmd.Context(), os.Stdout, o.rebalanceArgs()...)
		},
	}
	cmd.Flags().BoolVar(&noRebalance, "no-rebalance", false, "only promote; rebalance later")
	return cmd
}

func rebalanceCmd(o *clusterOptions) *cobra.Command {
	var stop bool
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "Move slots until every data node holds its share; change a running rebalance's --rate or --parallel; --stop",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if stop {
				return o.send(cmd.Context(), os.Stdout, "REBALANCE", "STOP")
			}
			return o.send(cmd.Context(), os.Stdout, o.rebalanceArgs()...)
		},
	}
	cmd.Flags().BoolVar(&stop, "stop", false, "start no new migration (those under way finish)")
	return cmd
}

func removeNodeCmd(o *clusterOptions) *cobra.Command {
	var cancel bool
	cmd := &cobra.Command{
		Use:   "remove-node NODE",
		Short: "Drain a node (by id, client or peer address): move everything off it, then remove it from the cluster",
		Long: "Drain a node: its slots and pieces move to the other data nodes while they serve, a voter hands its\n" +
			"vote to another node, and it leaves Raft and the map (state left in memgest status); stop its process then.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cancel {
				return o.send(cmd.Context(), os.Stdout, "NODE.DRAIN", args[0], "CANCEL")
			}
			if err := o.send(cmd.Context(), os.Stdout, "NODE.DRAIN", args[0]); err != nil {
				return err
			}
			if o.rate > 0 || o.parallel > 0 { // the drain's rebalance, at the pace asked
				return o.send(cmd.Context(), os.Stdout, o.rebalanceArgs()...)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&cancel, "cancel", false, "stop draining the node (migrations under way finish)")
	return cmd
}

// rebalanceArgs is the REBALANCE command with the options given.
func (o *clusterOptions) rebalanceArgs() []string {
	args := []string{"REBALANCE"}
	if o.rate > 0 {
		args = append(args, "RATE", strconv.FormatInt(int64(o.rate), 10))
	}
	if o.parallel > 0 {
		args = append(args, "PARALLEL", strconv.Itoa(o.parallel))
	}
	return args
}

// send runs one command on the node and prints what it answered.
func (o *clusterOptions) send(ctx context.Context, out io.Writer, args ...string) error {
	opts, err := o.clientOptions()
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmdArgs := make([]any, len(args))
	for i, a := range args {
		cmdArgs[i] = a
	}
	r, err := c.Do(ctx, cmdArgs...).Result()
	if err != nil {
		return fmt.Errorf("%s on %s: %w", args[0], opts.Addr, err)
	}
	fmt.Fprintf(out, "%s: %v\n", args[0], r)
	return nil
}

// clientOptions resolves the node to ask: --addr, else the newest running
// dev cluster's first node (its password and CA too, unless given), else
// the default.
func (o *clusterOptions) clientOptions() (*redis.Options, error) {
	opts := &redis.Options{Addr: o.addr, Password: cmp.Or(o.pass, os.Getenv("REDISCLI_AUTH")), Protocol: 2,
		DisableIdentity: true, MaxRetries: -1}
	ca := o.caFile
	if opts.Addr == "" {
		opts.Addr = defaultClientAddr
		if devs := liveDevStates(); len(devs) > 0 {
			opts.Addr = "127.0.0.1:" + strconv.Itoa(devs[0].BasePort)
			opts.Password = cmp.Or(opts.Password, devs[0].Password)
			ca = cmp.Or(ca, devs[0].CAFile)
		}
	}
	if ca != "" {
		tc, err := trustingCA(ca)
		if err != nil {
			return nil, err
		}
		opts.TLSConfig = tc
	}
	return opts, nil
}
