package rigconfig

import (
	"fmt"
	"sort"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"hcp-edge/transport/provision"
)

// BrokerSpec is what the configuration says about the broker's users
// (hcp-edge broker provision): the vhost and the callee's user from
// agent.amqp.url (vhost and calleeUser override them when not empty), the
// callee id, and every caller of gate.broker_users except the local operator,
// each allowed to publish commands when gate.callers gives it a capability.
// Notes report what is left out and why.
func (f File) BrokerSpec(vhost, calleeUser string) (spec provision.Spec, notes []string, err error) {
	if f.Agent.AMQP.URL != "" {
		u, err := amqp091.ParseURI(f.Agent.AMQP.URL)
		if err != nil {
			return spec, nil, fmt.Errorf("agent.amqp.url: %w", err)
		}
		if vhost == "" {
			vhost = u.Vhost
		}
		if calleeUser == "" && u.AuthMechanism == nil {
			calleeUser = u.Username
		}
	}
	if vhost == "" {
		return spec, nil, fmt.Errorf("no vhost: agent.amqp.url has none (set it, or pass --vhost)")
	}
	if calleeUser == "" {
		return spec, nil, fmt.Errorf("no callee broker user: agent.amqp.url has none (set it, or pass --callee-user)")
	}
	spec.VHost = vhost
	spec.Callee = provision.Role{User: calleeUser, ID: f.Agent.AMQP.CalleeID}
	users := make([]string, 0, len(f.Gate.BrokerUsers))
	for u := range f.Gate.BrokerUsers {
		users = append(users, u)
	}
	sort.Strings(users)
	mapped := map[string]bool{}
	for _, user := range users {
		caller := f.Gate.BrokerUsers[user]
		if user == LocalUser || caller == LocalUser {
			notes = append(notes, fmt.Sprintf("gate.broker_users.%s: the local operator submits over the control socket, never the broker: no broker user", user))
			continue
		}
		mapped[caller] = true
		acl, ok := f.Gate.Callers[caller]
		may := ok && len(acl.Capabilities) > 0
		if !may {
			notes = append(notes, fmt.Sprintf("gate.broker_users.%s: caller %s may use no capability (gate.callers): its event queue only, no publishing to hcp.commands", user, caller))
		}
		spec.Callers = append(spec.Callers, provision.Caller{Role: provision.Role{User: user, ID: caller}, MayCommand: may})
	}
	ids := make([]string, 0, len(f.Gate.Callers))
	for id := range f.Gate.Callers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !mapped[id] && id != LocalUser {
			notes = append(notes, fmt.Sprintf("gate.callers.%s: no broker user maps to it (gate.broker_users): nothing to provision", id))
		}
	}
	return spec, notes, nil
}
