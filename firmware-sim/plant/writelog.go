package plant

import (
	"sync"
	"time"
)

// Write is one entry of the write log: a write the firmware received on one of
// its interfaces, accepted or refused.
type Write struct {
	Seq      uint64    `json:"seq"`
	At       time.Time `json:"at"`
	SimTimeS float64   `json:"sim_time_s"`
	Device   string    `json:"device"`
	Via      string    `json:"via"`
	Channel  string    `json:"channel"`
	Value    float64   `json:"value"`
	Accepted bool      `json:"accepted"`
}

// writeLog is a bounded ring of the newest entries.
type writeLog struct {
	mu      sync.Mutex
	max     int
	buf     []Write // ring once len == max
	head    int     // index of the oldest entry when full
	seq     uint64
	dropped uint64
}

func (l *writeLog) add(w Write) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	w.Seq = l.seq
	if len(l.buf) < l.max {
		l.buf = append(l.buf, w)
		return
	}
	l.buf[l.head] = w
	l.head = (l.head + 1) % l.max
	l.dropped++
}

func (l *writeLog) since(seq uint64) []Write {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.buf)
	out := []Write{}
	for i := 0; i < n; i++ {
		w := l.buf[(l.head+i)%n]
		if w.Seq > seq {
			out = append(out, w)
		}
	}
	return out
}

func (l *writeLog) stats() (last, dropped uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.dropped
}

func (p *Plant) recordWrite(device, via, channel string, value float64, accepted bool, sim float64) {
	p.log.add(Write{At: p.now(), SimTimeS: sim, Device: device, Via: via, Channel: channel, Value: value, Accepted: accepted})
}

// Writes returns the write-log entries with a sequence number greater than
// since, oldest first (never nil).
func (p *Plant) Writes(since uint64) []Write { return p.log.since(since) }

// WriteLogStats returns the last sequence number and how many old entries were
// dropped to keep the log bounded.
func (p *Plant) WriteLogStats() (lastSeq, dropped uint64) { return p.log.stats() }
