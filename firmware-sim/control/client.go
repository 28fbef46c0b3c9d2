package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"hcp-edge/firmware-sim/plant"
)

// Client talks to the control API over its unix socket.
type Client struct {
	hc *http.Client
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConns: 4,
	}
	return &Client{hc: &http.Client{Transport: tr}}
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// APIError is an error reply of the API.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("control: %d: %s", e.Status, e.Message) }

// Do sends one request (body marshalled to JSON when not nil) and decodes the
// reply into out (when not nil); it returns the raw body too.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://rig-sim"+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 512<<20))
	if err != nil {
		return nil, fmt.Errorf("control: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorReply
		_ = json.Unmarshal(raw, &e)
		return raw, &APIError{Status: resp.StatusCode, Message: e.Error}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return raw, fmt.Errorf("control: %s %s: decode: %w", method, path, err)
		}
	}
	return raw, nil
}

// Status returns GET /status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	_, err := c.Do(ctx, http.MethodGet, "/status", nil, &s)
	return s, err
}

// StatusJSON returns the raw body of GET /status.
func (c *Client) StatusJSON(ctx context.Context) ([]byte, error) {
	return c.Do(ctx, http.MethodGet, "/status", nil, nil)
}

// Writes returns the write-log entries with seq > since.
func (c *Client) Writes(ctx context.Context, since uint64) ([]plant.Write, error) {
	var r WritesReply
	_, err := c.Do(ctx, http.MethodGet, "/writes?since="+strconv.FormatUint(since, 10), nil, &r)
	return r.Writes, err
}

// Faults returns the active faults.
func (c *Client) Faults(ctx context.Context) ([]plant.Fault, error) {
	var r FaultsReply
	_, err := c.Do(ctx, http.MethodGet, "/faults", nil, &r)
	return r.Faults, err
}

// Inject injects fault name for target ("" for none).
func (c *Client) Inject(ctx context.Context, name, target string) error {
	_, err := c.Do(ctx, http.MethodPost, "/faults/"+url.PathEscape(name), FaultRequest{Target: target}, nil)
	return err
}

// Clear clears fault name (for target, or every target when ""); name "all"
// clears every fault.
func (c *Client) Clear(ctx context.Context, name, target string) error {
	_, err := c.Do(ctx, http.MethodDelete, "/faults/"+url.PathEscape(name), FaultRequest{Target: target}, nil)
	return err
}

// GPIO reads a pin.
func (c *Client) GPIO(ctx context.Context, pin string) (bool, error) {
	var r PinLevel
	_, err := c.Do(ctx, http.MethodGet, "/gpio/"+url.PathEscape(pin), nil, &r)
	return r.Level, err
}

// SetGPIO drives an output pin (relay, heartbeat).
func (c *Client) SetGPIO(ctx context.Context, pin string, level bool) error {
	_, err := c.Do(ctx, http.MethodPut, "/gpio/"+url.PathEscape(pin), PinLevel{Level: level}, nil)
	return err
}

// WaitEdge long-polls until pin's level differs from level or timeout passes;
// it returns the level and whether it changed.
func (c *Client) WaitEdge(ctx context.Context, pin string, level bool, timeout time.Duration) (bool, bool, error) {
	var r EdgeReply
	path := fmt.Sprintf("/gpio/%s/edge?level=%t&timeout_ms=%d", url.PathEscape(pin), level, timeout.Milliseconds())
	_, err := c.Do(ctx, http.MethodGet, path, nil, &r)
	return r.Level, r.Changed, err
}

// Precursor returns what the precursor boat holds (GET /precursor).
func (c *Client) Precursor(ctx context.Context) (plant.Precursor, error) {
	var r PrecursorReply
	_, err := c.Do(ctx, http.MethodGet, "/precursor", nil, &r)
	return r.Precursor, err
}

// SetPrecursor puts pr in the precursor boat (PUT /precursor): plant.MoO3
// grows MoS2 from then on, plant.WO3 grows WS2; what has grown stays. An
// unknown precursor is refused with a 400 *APIError and changes nothing.
func (c *Client) SetPrecursor(ctx context.Context, pr plant.Precursor) error {
	_, err := c.Do(ctx, http.MethodPut, "/precursor", PrecursorReply{Precursor: pr}, nil)
	return err
}
