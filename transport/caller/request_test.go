package caller

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"hcp-edge/transport/wire"
)

// chunks splits data into artifact_chunk payloads of n bytes.
func chunks(uri string, data []byte, n int) []*wire.ArtifactChunk {
	h := sha256.Sum256(data)
	sum := "sha256:" + hex.EncodeToString(h[:])
	var out []*wire.ArtifactChunk
	for off := 0; ; off += n {
		end := min(off+n, len(data))
		c := &wire.ArtifactChunk{URI: uri, Offset: int64(off), Data: data[off:end], SizeBytes: int64(len(data)), Checksum: sum,
			Final: end == len(data)}
		out = append(out, c)
		if c.Final {
			return out
		}
	}
}

func TestAssembler(t *testing.T) {
	const uri = "hcp://5f0c1d2e-3a4b-4c5d-8e6f-708192a3b4c5/artifacts/plot.svg"
	data := bytes.Repeat([]byte("0123456789abcdef"), 700) // 11,200 bytes
	tests := []struct {
		name   string
		edit   func([]*wire.ArtifactChunk) []*wire.ArtifactChunk
		o      FetchOpts
		want   error
		chunks int
	}{
		{"intact", nil, FetchOpts{}, nil, 11},
		{"tampered chunk", func(cs []*wire.ArtifactChunk) []*wire.ArtifactChunk {
			d := bytes.Clone(cs[3].Data)
			d[7] ^= 1
			cs[3].Data = d
			return cs
		}, FetchOpts{}, ErrChecksumMismatch, 11},
		{"stated checksum differs from task_completed's", nil, FetchOpts{Checksum: "sha256:" + hex.EncodeToString(make([]byte, 32))},
			ErrChecksumMismatch, 0},
		{"too large", nil, FetchOpts{MaxSize: 10000}, ErrTooLarge, 0},
		{"chunk out of order", func(cs []*wire.ArtifactChunk) []*wire.ArtifactChunk {
			cs[1], cs[2] = cs[2], cs[1]
			return cs
		}, FetchOpts{}, ErrBadChunk, 1},
		{"size changes", func(cs []*wire.ArtifactChunk) []*wire.ArtifactChunk {
			cs[2].SizeBytes++
			return cs
		}, FetchOpts{}, ErrBadChunk, 2},
		{"another uri", func(cs []*wire.ArtifactChunk) []*wire.ArtifactChunk {
			cs[0].URI += "x"
			return cs
		}, FetchOpts{}, ErrBadChunk, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := chunks(uri, data, 1024)
			if tc.edit != nil {
				cs = tc.edit(cs)
			}
			var buf bytes.Buffer
			a := newAssembler(uri, &buf, tc.o)
			var err error
			done := false
			for _, c := range cs {
				if done, err = a.add(c); err != nil || done {
					break
				}
			}
			if !errors.Is(err, tc.want) || tc.want == nil && (!done || !bytes.Equal(buf.Bytes(), data)) {
				t.Fatalf("err %v done %v (%d bytes), want %v", err, done, buf.Len(), tc.want)
			}
			if tc.want == nil && a.result().Chunks != tc.chunks {
				t.Fatalf("%d chunks, want %d", a.result().Chunks, tc.chunks)
			}
		})
	}
}
