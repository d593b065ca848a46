package commands

import (
	"errors"

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
	errReservedValue = errors.New("ERR memgest: a string value may not begin with the 8 bytes memgest reserves for typed values (\\x00\\xffmgo)")
	// errWrongType aborts a read-modify-write of a key of another type.
	errWrongType = errors.New(resp.ErrWrongType.Text())
)

// typeOf is the type of an existing key's value.
func typeOf(cur core.Current) object.Type { return object.TypeOf(cur.Value) }

// notString says whether cur is a key that holds something other than a
// string: what string commands answer WRONGTYPE for.
func notString(cur core.Current) bool {
	return cur.Exists && typeOf(cur) != object.String
}

// checkStringValue refuses a string value the store would not take: too
// large, or starting like a typed value.
func (n *Server) checkStringValue(v []byte) (resp.Reply, bool) {
	if int64(len(v)) > n.Cfg.MaxValueSize {
		return resp.Err(errTooBig.Error()), false
	}
	if object.IsReserved(v) {
		return resp.Err(errReservedValue.Error()), false
	}
	return resp.Reply{}, true
}
