// Package reliability computes annual reliability, MTTDL and availability of
// each scheme from node MTTF and rebuild bandwidth, with the Markov models of
// Ring appendix A and KVMD §5.1 (DESIGN.md §7). It imports nothing from the
// project.
//
// Not built yet.
package reliability
