from services.guardians.app import start
from services.runtime.service.host import run_service

run_service("guardians", start)
