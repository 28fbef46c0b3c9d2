package provision

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// UserInfo is what State knows of a user.
type UserInfo struct {
	Tags []string
}

type userVHost struct{ user, vhost string }

type topicKey struct{ user, vhost, exchange string }

// State is the part of a broker's definitions that provisioning reads.
type State struct {
	VHosts      map[string]bool
	Users       map[string]UserInfo
	Permissions map[userVHost]Permission
	Topic       map[topicKey]TopicPermission
}

// definitions is the subset of RabbitMQ's definitions document (the JSON of
// `rabbitmqctl export_definitions`) that provisioning reads and writes.
type definitions struct {
	Users []struct {
		Name string          `json:"name"`
		Tags json.RawMessage `json:"tags"`
	} `json:"users"`
	VHosts []struct {
		Name string `json:"name"`
	} `json:"vhosts"`
	Permissions []struct {
		User      string `json:"user"`
		VHost     string `json:"vhost"`
		Configure string `json:"configure"`
		Write     string `json:"write"`
		Read      string `json:"read"`
	} `json:"permissions"`
	TopicPermissions []struct {
		User     string `json:"user"`
		VHost    string `json:"vhost"`
		Exchange string `json:"exchange"`
		Write    string `json:"write"`
		Read     string `json:"read"`
	} `json:"topic_permissions"`
}

// tags reads a user's tags: a list (RabbitMQ 3.10) or a comma-separated
// string (older exports).
func tags(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		var out []string
		start := 0
		for i := 0; i <= len(s); i++ {
			if i == len(s) || s[i] == ',' {
				if i > start {
					out = append(out, s[start:i])
				}
				start = i + 1
			}
		}
		return out
	}
	return nil
}

// ParseDefinitions reads a broker's state from its definitions document.
func ParseDefinitions(r io.Reader) (State, error) {
	var d definitions
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return State{}, fmt.Errorf("provision: definitions: %w", err)
	}
	st := State{VHosts: map[string]bool{}, Users: map[string]UserInfo{},
		Permissions: map[userVHost]Permission{}, Topic: map[topicKey]TopicPermission{}}
	for _, v := range d.VHosts {
		st.VHosts[v.Name] = true
	}
	for _, u := range d.Users {
		st.Users[u.Name] = UserInfo{Tags: tags(u.Tags)}
	}
	for _, p := range d.Permissions {
		st.Permissions[userVHost{p.User, p.VHost}] = Permission{User: p.User, VHost: p.VHost, Configure: p.Configure, Write: p.Write, Read: p.Read}
	}
	for _, t := range d.TopicPermissions {
		st.Topic[topicKey{t.User, t.VHost, t.Exchange}] = TopicPermission{User: t.User, VHost: t.VHost, Exchange: t.Exchange, Write: t.Write, Read: t.Read}
	}
	return st, nil
}

func sortedTopicKeys(m map[topicKey]TopicPermission) []topicKey {
	keys := make([]topicKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.vhost != b.vhost {
			return a.vhost < b.vhost
		}
		if a.user != b.user {
			return a.user < b.user
		}
		return a.exchange < b.exchange
	})
	return keys
}

func sortedPermKeys(m map[userVHost]Permission) []userVHost {
	keys := make([]userVHost, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].vhost != keys[j].vhost {
			return keys[i].vhost < keys[j].vhost
		}
		return keys[i].user < keys[j].user
	})
	return keys
}
