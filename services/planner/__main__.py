from services.planner.app import start
from services.runtime.service.host import run_service

run_service("planner", start)
