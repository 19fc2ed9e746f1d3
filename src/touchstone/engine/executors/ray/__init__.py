"""The Ray executor's modules: the executor (:mod:`.executor`), the cluster-wide judge limit
(:mod:`.limiter`), a Ray Dataset as a run's input (:mod:`.data`), a file read by Ray Data in parts
(:mod:`.files`) and the connection to the cluster (:mod:`.connect`). Ray is imported only inside
their functions, when a run uses it (``pip install 'touchstone-genai[ray]'``); import the executor as
``from touchstone.engine.executors import RayExecutor``."""
