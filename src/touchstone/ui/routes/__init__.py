"""The dashboard's routes, one :class:`fastapi.APIRouter` per page (its HTML and its ``/api`` JSON),
each built over the shared :class:`~touchstone.ui.pages.Pages`; :func:`touchstone.ui.app.create_app`
includes them. A router imports the pages' helpers and its view models, never another router."""
