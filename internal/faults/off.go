//go:build !failpoints

package faults

import "net"

// Built says whether this binary was built with the failpoints tag.
const Built = false

// Hit marks a failpoint; without the failpoints tag it does nothing.
func Hit(string) {}

// Active says whether a boolean failpoint is on; never without the tag.
func Active(string) bool { return false }

// Armed says whether a failpoint has an action; never without the tag.
func Armed(string) bool { return false }

// Arm sets a failpoint's action; without the tag it refuses.
func Arm(name, action string) error { return ErrNotBuilt }

// SetLink sets the fault on links to a peer address; without the tag it
// refuses.
func SetLink(addr, fault string) error { return ErrNotBuilt }

// Wrap returns c, a connection dialled to addr, unchanged without the tag.
func Wrap(c net.Conn, addr string) (net.Conn, error) { return c, nil }
