from services.doors.bus.app import start
from services.runtime.service.host import run_service

run_service("door", start)
