package server

import (
	"github.com/memgest/memgest/scheme/hybrid"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/none"
	"github.com/memgest/memgest/scheme/rep"
	"github.com/memgest/memgest/scheme/split"
	"github.com/memgest/memgest/scheme/stripe"
)

// kindsFor binds every scheme kind to the package implementing it: a new
// kind is a package and one line here (decision 0007). Stripe schemes
// and hybrid schemes write through stripes, the node's packed engine
// (nil: properties only).
func kindsFor(stripes *stripe.Engine) kind.Registry {
	return kind.Registry{
		none.Kind:   none.New,
		rep.Kind:    rep.New,
		split.Kind:  split.New,
		stripe.Kind: stripe.For(stripes),
		hybrid.Kind: hybrid.For(stripes),
	}
}
