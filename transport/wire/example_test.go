package wire_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"hcp-edge/transport/wire"
)

func Example() {
	sid := uuid.MustParse("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	env, err := wire.NewEnvelope(&sid, &wire.Event{
		EventType: wire.EventProgress,
		Sequence:  1,
		Data:      json.RawMessage(`{"stage":"ramp","percent":10}`),
	}, time.Date(2025, 1, 15, 8, 30, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	body, _ := wire.Encode(env)
	back, err := wire.Decode(body)
	if err != nil {
		panic(err)
	}
	ev, _ := back.Event()
	key, _ := wire.EventRoutingKey("alpha", back)
	fmt.Println(ev.EventType, ev.Sequence, key)

	_, err = wire.Decode([]byte(`{"hcp_version":"2.0"}`))
	fmt.Println(err)
	// Output:
	// progress 1 alpha.7c9e6679-7425-40de-944b-e07fc1f90ae7.event
	// hcp wire: message_id: missing required field
}
