import os

from evaluator.service_user import drop_privileges

drop_privileges("wsgi")  # a WSGI server's process started as root: the service user before the app loads

from django.core.wsgi import get_wsgi_application  # noqa: E402 - after the drop

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
