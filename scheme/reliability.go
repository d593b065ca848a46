package scheme

import "github.com/memgest/memgest/reliability"

// Model is the spec as the reliability model sees it: which positions of
// a shard's placement its keys occupy and which failures they survive.
// Write modes do not change a layout, so stripe:4+2@batch models as
// stripe:4+2 (under its own name).
func (sp Spec) Model() reliability.Scheme {
	var s reliability.Scheme
	switch sp.Kind {
	case Rep:
		s = reliability.Rep(sp.R)
	case Split, Stripe:
		s = reliability.Code(sp.Kind.String(), sp.K, sp.M)
	case Hybrid:
		s = reliability.Hybrid(sp.K, sp.M)
	default:
		s = reliability.None()
	}
	s.Name = sp.String()
	return s
}
