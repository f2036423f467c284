#!/bin/sh
# Example agentcron notifier: POSTs the notice JSON to a webhook.
#
#   WEBHOOK_URL  where to POST (required; give the tick --pass-env WEBHOOK_URL)
#
# Exit 0 when the server answered 2xx. When the connection could not even be
# made, nothing was sent: exit 75 so a later tick tries again. Any other
# failure (an error status, a timeout after sending) is uncertain: exit 1,
# and agentcron records the notice as unknown and never resends it.
set -u
url="${WEBHOOK_URL:?set WEBHOOK_URL and pass it: tick --pass-env WEBHOOK_URL}"
curl --silent --show-error --fail --max-time 30 \
     -X POST -H 'Content-Type: application/json' --data-binary @- "$url" >/dev/null
status=$?
case $status in
  0) exit 0 ;;
  6|7) exit 75 ;;   # could not resolve / connect: nothing was sent
  *) exit 1 ;;
esac
