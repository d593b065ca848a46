module github.com/memgest/memgest

go 1.26

require (
	github.com/klauspost/cpuid/v2 v2.3.0
	github.com/klauspost/reedsolomon v1.14.2
)

require golang.org/x/sys v0.30.0 // indirect
