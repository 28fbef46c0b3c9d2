module github.com/tinylib/msgp

go 1.24

require (
	github.com/philhofer/fwd v1.2.0
	golang.org/x/tools v0.22.0
)

require golang.org/x/mod v0.18.0 // indirect
