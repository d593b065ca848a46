package simcluster

import (
	"context"
	"strings"

	"github.com/memgest/memgest/server/resp"
)

// Session is one client connection to node i: its commands share a
// session (MULTI's queue, WATCH's versions), as a socket's do.
type Session struct {
	c *Cluster
	i int
	s interface {
		Do(ctx context.Context, args ...string) resp.Reply
		Pipeline(cmds ...[]string) []resp.Reply
	}
}

// Session opens a session on node i.
func (c *Cluster) Session(i int) *Session {
	return &Session{c: c, i: i, s: c.nodes[i].srv.Session()}
}

// Node is the index of the session's node.
func (s *Session) Node() int { return s.i }

// Do runs a command in the session, records it and its reply in the
// trace and returns the reply.
func (s *Session) Do(args ...string) resp.Reply {
	r := s.DoQuiet(args...)
	s.c.tracer.add("n%d session %s → %s", s.i, renderArgs(args), Render(r))
	return r
}

// DoQuiet is Do without the trace, for concurrent clients.
func (s *Session) DoQuiet(args ...string) resp.Reply {
	if !s.c.nodes[s.i].alive {
		s.c.t.Fatalf("simcluster: command on node %d, which is not running", s.i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	return s.s.Do(ctx, args...)
}

// Pipeline sends cmds at once, as a client pipelining them would, and
// returns their replies.
func (s *Session) Pipeline(cmds ...[]string) []resp.Reply {
	replies := s.PipelineQuiet(cmds...)
	var b strings.Builder
	for i, c := range cmds {
		b.WriteString("\n  " + renderArgs(c) + " → " + Render(replies[i]))
	}
	s.c.tracer.add("n%d pipeline%s", s.i, b.String())
	return replies
}

// PipelineQuiet is Pipeline without the trace, for concurrent clients.
func (s *Session) PipelineQuiet(cmds ...[]string) []resp.Reply {
	if !s.c.nodes[s.i].alive {
		s.c.t.Fatalf("simcluster: pipeline on node %d, which is not running", s.i)
	}
	return s.s.Pipeline(cmds...)
}
