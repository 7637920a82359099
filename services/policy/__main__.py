from services.policy.app import start
from services.runtime.host import run_service

run_service("policy", start)
