package commands

import (
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/wire"
)

// forwardReq carries a client command to the key's coordinator; the reply
// is the RESP encoding in the client's protocol version.
type forwardReq struct {
	Proto int
	Args  [][]byte
	// Import marks a command a migration's source forwards to the
	// importing shard's coordinator for a key it no longer holds
	// (migrate.go): run there although the map routes the slot to the
	// source.
	Import bool
}

// forwardImport is the bit of the protocol byte that carries Import.
const forwardImport = 0x80

func (f forwardReq) encode(e wire.Enc) wire.Enc {
	payload, tail := f.spool()
	return append(e, core.PeerReq{Payload: payload, Tail: tail}.Whole()...)
}

// spool is f's encoding as a frame's payload and tail: a large argument
// (a huge SET's value) is sent from the client's request, not copied.
func (f forwardReq) spool() (payload []byte, tail [][]byte) {
	proto := uint8(f.Proto)
	if f.Import {
		proto |= forwardImport
	}
	s := wire.Spool{Cur: wire.Enc(nil).U8(proto).U32(uint32(len(f.Args)))}
	for _, a := range f.Args {
		s.Bytes(a)
	}
	return s.Frame()
}

func decodeForward(b []byte) (forwardReq, error) {
	d := wire.NewDec(b)
	proto := d.U8()
	f := forwardReq{Proto: int(proto &^ forwardImport), Import: proto&forwardImport != 0}
	n := int(d.U32())
	if n > len(b) { // every argument takes at least one byte
		return f, wire.ErrMalformed
	}
	f.Args = make([][]byte, 0, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		f.Args = append(f.Args, d.Bytes())
	}
	return f, d.Done()
}

// scanReq is one step of a cluster-wide SCAN on one node.
type scanReq struct {
	Cursor uint64
	Count  int
	Match  []byte
	Type   string
}

func (s scanReq) encode(e wire.Enc) wire.Enc {
	return e.U64(s.Cursor).U32(uint32(s.Count)).Bytes(s.Match).Str(s.Type)
}

func decodeScan(b []byte) (scanReq, error) {
	d := wire.NewDec(b)
	s := scanReq{Cursor: d.U64(), Count: int(d.U32()), Match: d.Bytes(), Type: d.Str()}
	return s, d.Done()
}

type scanResp struct {
	Next uint64
	Keys [][]byte
}

func (s scanResp) encode(e wire.Enc) wire.Enc {
	e = e.U64(s.Next).U32(uint32(len(s.Keys)))
	for _, k := range s.Keys {
		e = e.Bytes(k)
	}
	return e
}

func decodeScanResp(b []byte) (scanResp, error) {
	d := wire.NewDec(b)
	s := scanResp{Next: d.U64()}
	n := int(d.U32())
	if n > len(b) {
		return s, wire.ErrMalformed
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		s.Keys = append(s.Keys, d.Bytes())
	}
	return s, d.Done()
}
