"""``python -m services.doors.gateway``: the HTTP gateway and web console, logged in as a client."""

from services.doors.gateway.app import start
from services.runtime.nats.access import CLIENT
from services.runtime.service.host import run_service

run_service(CLIENT, start)
