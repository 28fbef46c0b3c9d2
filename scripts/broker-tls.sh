#!/usr/bin/env bash
# Lets the local RabbitMQ authenticate TLS clients by their certificate (SASL EXTERNAL, the
# rabbitmq_auth_mechanism_ssl plugin; the login is the certificate's subject common name), for
# the TLS/mTLS tests (transport/amqp, cmd/hcp-edge) and as the shape of a production broker
# (docs/BROKER.md). Idempotent; no restart:
#   - enables the plugin (online);
#   - writes /etc/rabbitmq/conf.d/50-hcp-edge-tls.conf (auth_mechanisms PLAIN, AMQPLAIN,
#     EXTERNAL; ssl_cert_login_from common_name; ssl_options.verify verify_peer, which the
#     plugin requires before it accepts an EXTERNAL login) for the next start;
#   - applies the same two settings to the running node (they are read per connection).
# The TLS listener itself is not configured here: the tests start one on a free port with
# certificates generated at test time (rabbit_networking:start_ssl_listener) and stop it after.
# Called by scripts/broker.sh; run as root or the rabbitmq user.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/usr/lib/rabbitmq/bin"
log() { echo "broker-tls: $*" >&2; }

if ! rabbitmq-plugins list -e -m 2>/dev/null | grep -qx rabbitmq_auth_mechanism_ssl; then
  rabbitmq-plugins enable -q rabbitmq_auth_mechanism_ssl >/dev/null
  log "plugin rabbitmq_auth_mechanism_ssl enabled"
fi

conf=/etc/rabbitmq/conf.d/50-hcp-edge-tls.conf
want='# hcp-edge (scripts/broker-tls.sh): client-certificate logins (SASL EXTERNAL), login = the CN.
auth_mechanisms.1 = PLAIN
auth_mechanisms.2 = AMQPLAIN
auth_mechanisms.3 = EXTERNAL
ssl_cert_login_from = common_name
# rabbitmq_auth_mechanism_ssl refuses EXTERNAL unless the node-wide TLS options verify the peer.
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false'
if [ "$(cat "$conf" 2>/dev/null || true)" != "$want" ]; then
  mkdir -p "$(dirname "$conf")"
  printf '%s\n' "$want" >"$conf"
  chmod 0644 "$conf"
  log "wrote $conf"
fi

rabbitmqctl -q eval "ok = application:set_env(rabbit, auth_mechanisms, ['PLAIN', 'AMQPLAIN', 'EXTERNAL']),
  ok = application:set_env(rabbit, ssl_cert_login_from, common_name),
  Ssl = case application:get_env(rabbit, ssl_options) of {ok, L} when is_list(L) -> L; _ -> [] end,
  ok = application:set_env(rabbit, ssl_options,
         lists:ukeymerge(1, [{fail_if_no_peer_cert, false}, {verify, verify_peer}], lists:ukeysort(1, Ssl)))." >/dev/null
log "EXTERNAL offered to TLS clients with a certificate; login from the certificate's CN"
