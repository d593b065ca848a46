// Package scheme names and validates resilience schemes (DESIGN.md §2): the
// spec grammar (`none`, `rep:R`, `split:K+M`, and later `stripe:K+M`,
// `hybrid:K+M`), aliases, and what each spec costs and tolerates. It holds no
// data; the data path for each kind lives in the server's coordinator, which
// dispatches on Spec.Kind.
package scheme
