package commands

import (
	"github.com/memgest/memgest/object"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// A key's Redis type is carried by its value (package object): a hash is
// encoded behind a header no string may begin with. String commands answer
// WRONGTYPE for a typed value, and refuse to store a string that would
// read as one (docs/decisions/0012-value-types.md).

var (
	// errReservedValue refuses a string that starts with object's header.
	errReservedValue error = replyErr("ERR memgest: a string value may not begin with the 8 bytes memgest reserves for typed values (\\x00\\xffmgo)")
	// errWrongType aborts a read-modify-write of a key of another type.
	errWrongType error = replyErr(resp.ErrWrongType.Text())
)

// typeOf is the type of an existing key's value.
func typeOf(cur core.Current) object.Type { return object.TypeOf(cur.Value) }

// notString says whether cur is a key that holds something other than a
// string: what string commands answer WRONGTYPE for.
func notString(cur core.Current) bool {
	return cur.Exists && typeOf(cur) != object.String
}

// storableString says why a string value cannot be stored — too large,
// or starting like a typed value — or nil when it can.
func (n *Server) storableString(v []byte) error {
	if int64(len(v)) > n.Cfg.MaxValueSize {
		return errTooBig
	}
	if object.IsReserved(v) {
		return errReservedValue
	}
	return nil
}

// checkStringValue is storableString as a command's reply.
func (n *Server) checkStringValue(v []byte) (resp.Reply, bool) {
	if err := n.storableString(v); err != nil {
		return errReply(err), false
	}
	return resp.Reply{}, true
}
