module github.com/santhosh-tekuri/jsonschema/v6

go 1.21

