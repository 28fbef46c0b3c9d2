module hcp-edge

go 1.26.8

require (
	github.com/Masterminds/semver/v3 v3.5.0
	github.com/chromedp/chromedp v0.23.0
	github.com/creack/pty v1.1.24
	github.com/goburrow/modbus v0.1.0
	github.com/golang-jwt/jwt/v5 v5.3.1
	github.com/google/uuid v1.6.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.72.0
	github.com/rabbitmq/amqp091-go v1.16.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/sony/gobreaker/v2 v2.4.0
	github.com/tinylib/msgp v1.6.5
	go.bug.st/serial v1.8.0
	go.etcd.io/bbolt v1.5.0
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sys v0.48.0
	golang.org/x/time v0.16.0
	periph.io/x/conn/v3 v3.7.3
	periph.io/x/host/v3 v3.8.5
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/goburrow/serial v0.1.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/philhofer/fwd v1.2.0 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/tools v0.49.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

tool github.com/tinylib/msgp

// v6.0.3 with its draft meta-schemas compiled on first use instead of in init() (5-9 ms of every
// command's start-up): internal/thirdparty/jsonschema/README.hcp-edge.md says why, what changed
// and how to drop it.
replace github.com/santhosh-tekuri/jsonschema/v6 => ./internal/thirdparty/jsonschema

// v1.6.5 with its MessagePack-to-JSON converters' tables built by a switch instead of in init()
// (the tables linked ~57 kB of converters nobody calls into the armv7 binary):
// internal/thirdparty/msgp/README.hcp-edge.md says why, what changed and how to drop it.
replace github.com/tinylib/msgp => ./internal/thirdparty/msgp

// v1.16.0 with DialConfig refusing Config.Recovery instead of installing the experimental
// automatic recovery (which linked ~53 kB of recovery code hcp-edge never runs: its own
// supervisor reconnects): internal/thirdparty/amqp091/README.hcp-edge.md.
replace github.com/rabbitmq/amqp091-go => ./internal/thirdparty/amqp091
