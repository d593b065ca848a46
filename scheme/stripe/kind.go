package stripe

import "github.com/memgest/memgest/scheme"

// Kind is the scheme kind this package's chunks and parity serve.
const Kind = scheme.Stripe
