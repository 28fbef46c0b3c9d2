package amqp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// benchEvents builds n progress events for caller as outbox messages.
func benchEvents(b *testing.B, caller string, n int) []outbox.Message {
	sid := uuid.New()
	ms := make([]outbox.Message, n)
	for i := range ms {
		env, err := wire.NewEnvelope(&sid, &wire.Event{EventType: wire.EventStateChanged, Sequence: uint64(i + 1),
			Data: json.RawMessage(`{"stage":"ramp","percent":37.5,"message":"furnace 512.3 C, setpoint 700 C"}`)}, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if ms[i], err = outbox.MessageFor(caller, env, ""); err != nil {
			b.Fatal(err)
		}
	}
	return ms
}

func benchQueue(b *testing.B, _ *amqp091.Connection, caller string) *amqp091.Channel {
	// The caller declares its own queue (the callee may not).
	ch, err := amqptest.Dial(b, amqptest.AlphaURL()).Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := tamqp.DeclareCallerQueue(ch, tamqp.CallerQueueOpts{CallerID: caller, MaxLength: 20000}); err != nil {
		b.Fatal(err)
	}
	q, _ := wire.EventQueue(caller)
	b.Cleanup(func() { ch.QueueDelete(q, false, false, false); ch.Close() })
	return ch
}

// benchOutbox opens an outbox file of its own with outbox.Open, as the agent
// does (cmd/hcp-edge), so its bbolt options are the agent's.
func benchOutbox(b *testing.B) (*outbox.Outbox, *bolt.DB) {
	ob, err := outbox.Open(filepath.Join(b.TempDir(), "outbox.db"), outbox.Opts{TelemetryBound: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ob.Close() })
	return ob, ob.DB()
}

// bare publishes ms with a window of 256 deferred confirms and waits for all.
func bare(b *testing.B, conn *amqp091.Connection, ms []outbox.Message) time.Duration {
	d, err := bareRun(conn, ms)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// bareRun is bare, returning its error (for a goroutine other than the
// benchmark's).
func bareRun(conn *amqp091.Connection, ms []outbox.Message) (time.Duration, error) {
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		return 0, err
	}
	ctx := context.Background()
	start := time.Now()
	var q []*amqp091.DeferredConfirmation
	for _, m := range ms {
		if len(q) == 256 {
			if ok, err := q[0].WaitContext(ctx); !ok || err != nil {
				return 0, fmt.Errorf("nack: %v", err)
			}
			q = q[1:]
		}
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, m.Exchange, m.RoutingKey, false, false, tamqp.Publishing(m))
		if err != nil {
			return 0, err
		}
		q = append(q, dc)
	}
	for _, dc := range q {
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			return 0, fmt.Errorf("nack: %v", err)
		}
	}
	return time.Since(start), nil
}

// through appends ms one by one (one fsynced commit each, as the session
// does) while the Publisher runs, and waits until the outbox is empty.
func through(b *testing.B, conn *amqp091.Connection, ob *outbox.Outbox, ms []outbox.Message) time.Duration {
	pub, err := tamqp.NewPublisher(ob, tamqp.PublisherOpts{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); pub.Run(ctx, conn) }()
	defer func() { cancel(); wg.Wait() }()
	start := time.Now()
	for _, m := range ms {
		if _, err := ob.Append(m); err != nil {
			b.Fatal(err)
		}
	}
	waitEmpty(b, ob)
	return time.Since(start)
}

// throughConcurrent is through with several producers (as several sessions
// would be), each appending its share of ms one by one: their Appends share
// commits.
func throughConcurrent(b *testing.B, conn *amqp091.Connection, ob *outbox.Outbox, ms []outbox.Message, producers int) time.Duration {
	pub, err := tamqp.NewPublisher(ob, tamqp.PublisherOpts{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); pub.Run(ctx, conn) }()
	defer func() { cancel(); wg.Wait() }()
	start := time.Now()
	var pw sync.WaitGroup
	for p := range producers {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for i := p; i < len(ms); i += producers {
				if _, err := ob.Append(ms[i]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	pw.Wait()
	waitEmpty(b, ob)
	return time.Since(start)
}

// txid returns the id of the last committed bbolt transaction of ob's file:
// the difference of two readings counts commits (each is two fdatasyncs).
func txid(b *testing.B, ob *outbox.Outbox) int {
	var id int
	if err := ob.DB().View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		b.Fatal(err)
	}
	return id
}

func waitEmpty(b *testing.B, ob *outbox.Outbox) {
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Millisecond) {
		if n, _ := ob.Depth(); n == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("outbox did not drain")
		}
	}
}

// BenchmarkOutboxVsBare: events per second with publisher confirms, through
// the durable outbox (append + publish + confirm + delete) and through a bare
// amqp091-go publisher, in the same run; outbox/bare is the ratio.
func BenchmarkOutboxVsBare(b *testing.B) {
	conn := amqptest.Dial(b, amqptest.URL())
	caller := amqptest.AlphaID
	benchQueue(b, conn, caller)
	const n = 2000
	ms := benchEvents(b, caller, n)
	ob, _ := benchOutbox(b)
	var tb, to time.Duration
	commits := 0
	var fl floorMetrics
	for b.Loop() {
		tb += bare(b, conn, ms)
		fl.measure(b, conn, ms)
		c0 := txid(b, ob)
		to += through(b, conn, ob, ms)
		commits += txid(b, ob) - c0
	}
	bareRate := float64(n*b.N) / tb.Seconds()
	obRate := float64(n*b.N) / to.Seconds()
	b.ReportMetric(bareRate, "bare-events/s")
	b.ReportMetric(obRate, "outbox-events/s")
	b.ReportMetric(obRate/bareRate, "outbox/bare")
	b.ReportMetric(float64(commits)/float64(n*b.N), "commits/event")
	fl.report(b, 1, bareRate)
}

// BenchmarkOutboxVsBarePipelined: BenchmarkOutboxVsBare with the one
// producer pipelining as the bare publisher does (a window of 256
// AppendAsyncs in flight, each message reported stored only when its Wait
// returns, after its commit): what group commit gives a single producer that
// need not wait for each message before producing the next.
func BenchmarkOutboxVsBarePipelined(b *testing.B) {
	conn := amqptest.Dial(b, amqptest.URL())
	caller := amqptest.AlphaID
	benchQueue(b, conn, caller)
	const n = 2000
	ms := benchEvents(b, caller, n)
	ob, _ := benchOutbox(b)
	var tb, to time.Duration
	commits := 0
	for b.Loop() {
		tb += bare(b, conn, ms)
		c0 := txid(b, ob)
		to += throughPipelined(b, conn, ob, ms, 256)
		commits += txid(b, ob) - c0
	}
	bareRate := float64(n*b.N) / tb.Seconds()
	obRate := float64(n*b.N) / to.Seconds()
	b.ReportMetric(bareRate, "bare-events/s")
	b.ReportMetric(obRate, "outbox-events/s")
	b.ReportMetric(obRate/bareRate, "outbox/bare")
	b.ReportMetric(float64(commits)/float64(n*b.N), "commits/event")
}

// throughPipelined is through with up to window AppendAsyncs in flight.
func throughPipelined(b *testing.B, conn *amqp091.Connection, ob *outbox.Outbox, ms []outbox.Message, window int) time.Duration {
	return throughPipelinedN(b, conn, ob, ms, 1, window)
}

// throughPipelinedN is throughPipelined with several producers, each
// appending its share of ms with up to window/producers AppendAsyncs in
// flight.
func throughPipelinedN(b *testing.B, conn *amqp091.Connection, ob *outbox.Outbox, ms []outbox.Message, producers, window int) time.Duration {
	pub, err := tamqp.NewPublisher(ob, tamqp.PublisherOpts{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); pub.Run(ctx, conn) }()
	defer func() { cancel(); wg.Wait() }()
	start := time.Now()
	var pw sync.WaitGroup
	for p := range producers {
		pw.Add(1)
		go func() {
			defer pw.Done()
			var q []*outbox.Pending
			for i := p; i < len(ms); i += producers {
				if len(q) == window/producers {
					if _, err := q[0].Wait(); err != nil {
						b.Error(err)
						return
					}
					q = q[1:]
				}
				pe, err := ob.AppendAsync(ms[i])
				if err != nil {
					b.Error(err)
					return
				}
				q = append(q, pe)
			}
			for _, pe := range q {
				if _, err := pe.Wait(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	pw.Wait()
	waitEmpty(b, ob)
	return time.Since(start)
}

// BenchmarkOutboxVsBareConcurrentPipelined: four producers, each keeping a
// window of 64 AppendAsyncs in flight (256 in all, as the bare publisher),
// each message reported stored only when its Wait returns, after its commit.
func BenchmarkOutboxVsBareConcurrentPipelined(b *testing.B) {
	const producers = 4
	conn := amqptest.Dial(b, amqptest.URL())
	caller := amqptest.AlphaID
	benchQueue(b, conn, caller)
	const n = 2000
	ms := benchEvents(b, caller, n)
	ob, _ := benchOutbox(b)
	var tb, to time.Duration
	commits := 0
	for b.Loop() {
		tb += bare(b, conn, ms)
		c0 := txid(b, ob)
		to += throughPipelinedN(b, conn, ob, ms, producers, 256)
		commits += txid(b, ob) - c0
	}
	bareRate := float64(n*b.N) / tb.Seconds()
	obRate := float64(n*b.N) / to.Seconds()
	b.ReportMetric(bareRate, "bare-events/s")
	b.ReportMetric(obRate, "outbox-events/s")
	b.ReportMetric(obRate/bareRate, "outbox/bare")
	b.ReportMetric(float64(commits)/float64(n*b.N), "commits/event")
	b.ReportMetric(producers, "producers")
}

// BenchmarkOutboxVsBareConcurrent: BenchmarkOutboxVsBare with 4 producers
// appending at once (several sessions), whose Appends share commits.
func BenchmarkOutboxVsBareConcurrent(b *testing.B) {
	const producers = 4
	conn := amqptest.Dial(b, amqptest.URL())
	caller := amqptest.AlphaID
	benchQueue(b, conn, caller)
	const n = 2000
	ms := benchEvents(b, caller, n)
	ob, _ := benchOutbox(b)
	var tb, to time.Duration
	commits := 0
	var fl floorMetrics
	for b.Loop() {
		tb += bare(b, conn, ms)
		fl.measure(b, conn, ms)
		c0 := txid(b, ob)
		to += throughConcurrent(b, conn, ob, ms, producers)
		commits += txid(b, ob) - c0
	}
	bareRate := float64(n*b.N) / tb.Seconds()
	obRate := float64(n*b.N) / to.Seconds()
	b.ReportMetric(bareRate, "bare-events/s")
	b.ReportMetric(obRate, "outbox-events/s")
	b.ReportMetric(obRate/bareRate, "outbox/bare")
	b.ReportMetric(float64(commits)/float64(n*b.N), "commits/event")
	fl.report(b, producers, bareRate)
	b.ReportMetric(producers, "producers")
}

// BenchmarkDrain: the rate at which a backlog of N buffered events (default
// 100,000; HCP_BENCH_DRAIN_N overrides) drains after the connection returns.
func BenchmarkDrain(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("HCP_BENCH_DRAIN_N")); err == nil && v > 0 {
		n = v
	}
	conn := amqptest.Dial(b, amqptest.URL())
	caller := amqptest.AlphaID
	benchQueue(b, conn, caller)
	ms := benchEvents(b, caller, n)
	ob, db := benchOutbox(b)
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		for i := 0; i < n; i += 1000 { // fill fast: 1000 per commit
			if err := db.Update(func(tx *bolt.Tx) error { _, err := ob.AppendTx(tx, ms[i:min(i+1000, n)]...); return err }); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		pub, _ := tamqp.NewPublisher(ob, tamqp.PublisherOpts{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- pub.Run(ctx, conn) }()
		waitEmpty(b, ob)
		total += time.Since(start)
		cancel()
		<-done
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "drained-events/s")
	b.ReportMetric(float64(n), "backlog")
}

// throughTx is the agent's path: each of sessions producers commits its
// share of ms one step at a time, each step one bbolt transaction of the
// outbox's file that writes the session's record and appends the step's
// event with AppendTx (as session/store's Update and cmd/hcp-edge's uplink
// do), while the Publisher runs; then it waits until the outbox is empty.
func throughTx(b *testing.B, conn *amqp091.Connection, ob *outbox.Outbox, ms []outbox.Message, sessions int) time.Duration {
	pub, err := tamqp.NewPublisher(ob, tamqp.PublisherOpts{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); pub.Run(ctx, conn) }()
	defer func() { cancel(); wg.Wait() }()
	rec := make([]byte, 200) // about a session record
	start := time.Now()
	var pw sync.WaitGroup
	for s := range sessions {
		pw.Add(1)
		go func() {
			defer pw.Done()
			key := []byte(fmt.Sprintf("session-%d", s))
			for i := s; i < len(ms); i += sessions {
				if err := ob.DB().Update(func(tx *bolt.Tx) error {
					bk, err := tx.CreateBucketIfNotExists([]byte("sessions"))
					if err != nil {
						return err
					}
					if err := bk.Put(key, rec); err != nil {
						return err
					}
					_, err = ob.AppendTx(tx, ms[i])
					return err
				}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	pw.Wait()
	waitEmpty(b, ob)
	return time.Since(start)
}

// benchTx runs throughTx against bare, as BenchmarkOutboxVsBare does.
func benchTx(b *testing.B, sessions int) {
	conn := amqptest.Dial(b, amqptest.URL())
	caller := amqptest.AlphaID
	benchQueue(b, conn, caller)
	const n = 2000
	ms := benchEvents(b, caller, n)
	ob, _ := benchOutbox(b)
	var tb, to time.Duration
	commits := 0
	for b.Loop() {
		tb += bare(b, conn, ms)
		c0 := txid(b, ob)
		to += throughTx(b, conn, ob, ms, sessions)
		commits += txid(b, ob) - c0
	}
	bareRate := float64(n*b.N) / tb.Seconds()
	obRate := float64(n*b.N) / to.Seconds()
	b.ReportMetric(bareRate, "bare-events/s")
	b.ReportMetric(obRate, "outbox-events/s")
	b.ReportMetric(obRate/bareRate, "outbox/bare")
	b.ReportMetric(float64(commits)/float64(n*b.N), "commits/event")
	b.ReportMetric(float64(sessions), "sessions")
}

// BenchmarkOutboxTxVsBare: the agent's own path, one session: each event is
// appended with AppendTx in the step's transaction (one commit per step);
// commits/event above 1 are the commits the outbox makes of its own
// (deletions of confirmed messages).
func BenchmarkOutboxTxVsBare(b *testing.B) { benchTx(b, 1) }

// BenchmarkOutboxTxVsBareConcurrent: BenchmarkOutboxTxVsBare with four
// sessions stepping at once (each step its own transaction, as the session
// store commits them).
func BenchmarkOutboxTxVsBareConcurrent(b *testing.B) { benchTx(b, 4) }
