from services.executor.app import start
from services.runtime.service.host import run_service

run_service("executor", start)
