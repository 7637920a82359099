from services.door.app import start
from services.runtime.host import run_service

run_service("door", start)
