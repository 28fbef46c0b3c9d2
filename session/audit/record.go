package audit

//go:generate go tool msgp -unexported

// record is the stored form of an Entry.
type record struct {
	Seq     uint64   `msg:"seq"`
	At      int64    `msg:"at"` // unix nanoseconds
	Session string   `msg:"sid"`
	Kind    string   `msg:"kind"`
	Detail  string   `msg:"detail"`
	Prev    [32]byte `msg:"prev"`
	Hash    [32]byte `msg:"hash"`
}

// head is the stored head of the chain.
type head struct {
	Seq  uint64   `msg:"seq"`
	Hash [32]byte `msg:"hash"`
}
